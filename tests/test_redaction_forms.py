"""Redaction in every escaping (issue 29): a secret is found raw, JSON-escaped to any depth
(a secret holding `"` or `\\` in a tool's JSON, inside a results file's JSON, is escaped
twice), HTML-escaped, escaped for a Markdown table and URL-encoded; and a run whose tool
prints such secrets inside JSON inside JSON writes none of their forms into any file."""

from __future__ import annotations

import html
import json
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalctl.secrets import redact
from tests.cli_helpers import run_cli

# Each holds a quote, a backslash, `<`, `&` and non-ASCII (one outside the BMP, which JSON
# escapes as a surrogate pair); the second is redacted because evalctl.toml names it.
PLANTED = {
    "PLANTED_TOKEN": 'tok"en\\back<slash>&amp;é日本🔑-0001',
    "DEPLOY_HOOK": 'https://hooks.example/x?a=1&b="q"\\<ü>-0002',
}


def _json_levels(value: str, depth: int) -> set[str]:
    """`value` inside JSON strings 1..depth levels deep, non-ASCII kept or \\u-escaped."""
    found: set[str] = set()
    level = {value}
    for _ in range(depth):
        level = {json.dumps(v, ensure_ascii=a)[1:-1] for v in level for a in (False, True)}
        found |= level
    return found


def forms(value: str, depth: int = 4) -> set[str]:
    """Every form of `value` a file may hold: raw and JSON-escaped up to `depth` levels, each
    also HTML-escaped (with and without quotes) and URL-encoded."""
    out: set[str] = set()
    for text in {value} | _json_levels(value, depth):
        out |= {
            text,
            html.escape(text),
            html.escape(text, quote=False),
            urllib.parse.quote(text, safe=""),
            urllib.parse.quote_plus(text),
        }
    return out


@pytest.fixture
def planted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[dict[str, str]]:
    from evalctl.config import load_settings

    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "evalctl.toml").write_text('redact_env = ["DEPLOY_HOOK"]\n')
    monkeypatch.chdir(tmp_path)
    load_settings(tmp_path)
    yield PLANTED
    load_settings(tmp_path / "elsewhere")  # redact_env back to none


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_every_form_of_a_secret_is_redacted(planted: dict[str, str], name: str) -> None:
    value = planted[name]
    for form in sorted(forms(value, depth=5)):
        cleaned = redact(f"before {form} after")
        assert form not in cleaned, form
        assert cleaned == f"before [REDACTED:{name}] after", form


def test_a_secret_escaped_twice_in_a_json_document_leaves_valid_json(
    planted: dict[str, str],
) -> None:
    """A tool's JSON held as a string inside a result, held as a string inside results.json:
    after redaction each level still parses, and the secret's place holds the mask."""
    secret = planted["PLANTED_TOKEN"]
    inner = json.dumps({"token": secret, "n": 1})
    middle = json.dumps({"tool_output": inner})
    outer = json.dumps({"case": middle}, ensure_ascii=False)
    cleaned = redact(outer)
    level1 = json.loads(json.loads(cleaned)["case"])
    level2 = json.loads(level1["tool_output"])
    assert level2 == {"token": "[REDACTED:PLANTED_TOKEN]", "n": 1}


def test_a_secret_eight_levels_of_json_deep_is_redacted(planted: dict[str, str]) -> None:
    value = planted["PLANTED_TOKEN"]
    for _ in range(8):
        value = json.dumps({"inner": value})
    cleaned = redact(value)
    assert "0001" not in cleaned
    for _ in range(8):
        cleaned = json.loads(cleaned)["inner"]
    assert cleaned == "[REDACTED:PLANTED_TOKEN]"


def test_a_markdown_table_cell_of_a_secret_is_redacted(planted: dict[str, str]) -> None:
    from evalctl.reports.markdown import cell

    secret = planted["PLANTED_TOKEN"]
    for value in (secret, {"token": secret}):
        written = cell(value)
        assert "0001" in written  # the cell did hold the secret, escaped
        assert "0001" not in redact(f"| {written} |")


def test_a_secret_a_cut_would_split_is_masked_before_the_cut(planted: dict[str, str]) -> None:
    """Renderers keep the start of a long value (a Markdown cell 160 characters, JUnit 2000):
    a secret across the cut is masked first, not left as a start redaction cannot know."""
    from evalctl.reports.markdown import cell

    secret = planted["PLANTED_TOKEN"]
    written = cell("x" * 150 + secret + "y" * 100)
    assert written.startswith("x" * 150) and "tok" not in written


def test_a_secret_deeper_than_the_text_allows_costs_nothing(planted: dict[str, str]) -> None:
    """Text that holds the secret's letters but not its escapes is left alone (the depth a
    text is searched to is bounded by its own runs of backslashes)."""
    text = "tok en back slash 0001 " * 100
    assert redact(text) == text


SUITE = """
[suite]
name = "leaky"
kind = "assert"
system_prompt = "Use the tool."
max_turns = 3
tools = ["leak"]

[[suite.tool]]
name = "leak"
description = "Answers with JSON that holds the planted secrets, nested and escaped"
python = "leaky_tool:leak"
timeout_s = 120

[[case]]
id = "echo"
input = { prompt = "Go" }
[[case.assert]]
type = "contains"
value = "no such text"

[[case]]
id = "crash"
input = { prompt = "Go and crash" }
[[case.assert]]
type = "contains"
value = "never"
"""

TOOL = """
import html, json, urllib.parse

SECRETS = {secrets!r}


def leak():
    out = {{}}
    for name, secret in SECRETS.items():
        out[name] = {{
            "plain": secret,
            "json": json.dumps({{"token": secret}}),
            "json_ascii": json.dumps({{"token": secret}}, ensure_ascii=True),
            "deeper": json.dumps({{"inner": json.dumps({{"token": secret}})}}),
            "html": html.escape(secret),
            "url": urllib.parse.quote(secret, safe=""),
        }}
    return out
"""


def _script(secrets: dict[str, str]) -> str:
    # The model's answers quote the secrets too: escaped once in the answer's own JSON.
    answer = json.dumps({"echo": list(secrets.values())})
    return (
        '[[cases."leaky/echo"]]\n'
        'tool_calls = [{ name = "leak", arguments = {} }]\n\n'
        '[[cases."leaky/echo"]]\n'
        f"content = {json.dumps(answer)}\n\n"
        '[[cases."leaky/crash"]]\n'
        'tool_calls = [{ name = "leak", arguments = {} }]\n\n'
        '[[cases."leaky/crash"]]\n'
        'error = "crash"\n'
    )


def test_planted_secrets_in_nested_tool_json_reach_no_file_in_any_form(
    planted: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "leaky.toml").write_text(SUITE)
    (tmp_path / "leaky_tool.py").write_text(TOOL.format(secrets=planted))
    (tmp_path / "script.toml").write_text(_script(planted))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "out" / "step-summary.md"))
    common = ("--provider", "scripted", "--script", "script.toml", "--cases", "leaky.toml")
    ran = run_cli(
        capsys,
        "run",
        *common,
        *("--out", "out", "--junit", "out/junit.xml", "--markdown", "out/summary.md"),
        "--json",
        "--no-progress",
    )
    assert ran.code in (1, 3), ran.err  # the echo case fails, the crash case is an error
    report = run_cli(capsys, "report", "out/results.json", "--html", "out/report.html")
    assert report.code == 0, report.err
    # The secrets did travel: the tool's nested JSON is in the results, masked, and parses.
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    echo = next(case for case in results["cases"] if case["id"] == "echo")
    value = echo["tool_calls"][0]["data"]["value"]["PLANTED_TOKEN"]
    assert json.loads(value["json"]) == {"token": "[REDACTED:PLANTED_TOKEN]"}
    deeper = json.loads(json.loads(value["deeper"])["inner"])
    assert deeper == {"token": "[REDACTED:PLANTED_TOKEN]"}

    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    names = {p.name for p in written}
    assert names >= {
        "results.json",
        "results.toml",
        "journal.jsonl",
        "junit.xml",
        "summary.md",
        "report.html",
        "step-summary.md",
        "leaky__crash.json",  # the crash repro
    }, names
    _assert_no_form(planted, written, ran.out + ran.err + report.out + report.err)


def test_planted_secrets_reach_no_matrix_page_in_any_form(
    planted: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "leaky.toml").write_text(SUITE)
    (tmp_path / "leaky_tool.py").write_text(TOOL.format(secrets=planted))
    (tmp_path / "script.toml").write_text(_script(planted))
    matrix = run_cli(
        capsys,
        "run",
        *("--provider", "scripted", "--script", "script.toml", "--cases", "leaky.toml"),
        *("--model", "m1", "--model", "m2", "--out", str(tmp_path / "matrix"), "--json"),
    )
    assert matrix.code in (1, 3), matrix.err
    written = [p for p in (tmp_path / "matrix").rglob("*") if p.is_file()]
    assert {p.name for p in written} >= {"matrix.json", "matrix.html", "matrix.md"}
    _assert_no_form(planted, written, matrix.out + matrix.err)


def _assert_no_form(planted: dict[str, str], written: list[Path], streams: str) -> None:
    for name, secret in planted.items():
        for form in forms(secret):
            assert form not in streams, (name, form)
            for path in written:
                assert form.encode() not in path.read_bytes(), (name, form, path)
