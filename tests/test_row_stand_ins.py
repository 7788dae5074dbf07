"""Stand-ins that answer from the row (issue 31): `--provider echo` answers with the prompt
as sent, and a reply script's replies are templates over their case, so one `[[default]]`
reply answers every row of a data file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalctl.cases.loader import load_suite
from evalctl.chat import CompletionRequest, Message
from evalctl.errors import ProviderError
from evalctl.providers.registry import SPECS
from evalctl.providers.scripted import ScriptedProvider, load_script
from evalctl.runner.script_values import run_case_values
from tests.cli_helpers import run_cli

SUITE = """\
[suite]
name = "capitals"
kind = "assert"
cases_from = "rows.csv"
id_template = "{{ country | slug }}"
system_prompt = "Answer with one word."

[suite.case_template]
input = { prompt = "What is the capital of {{ country }}?" }
[[suite.case_template.assert]]
type = "equals"
value = "{{ capital }}"
"""

ROWS = """\
country,capital
France,Paris
Côte d'Ivoire,Yamoussoukro
Peru,Lima
"""


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "rows.csv").write_text(ROWS)
    path = tmp_path / "capitals.toml"
    path.write_text(SUITE)
    return path


def _run(capsys: pytest.CaptureFixture[str], out: Path, *args: str) -> dict[str, Any]:
    ran = run_cli(capsys, "run", *args, "--out", str(out), "--no-progress")
    assert ran.code == 0, ran.out + ran.err
    results: dict[str, Any] = json.loads((out / "results.json").read_text())
    return results


def test_echo_answers_each_case_with_its_prompt_as_sent(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = _run(capsys, tmp_path / "out", "--provider", "echo", "--cases", str(suite))
    answers = {c["id"]: c["output"] for c in results["cases"]}
    # The rendered prompt, not the template, and not the system prompt.
    assert answers == {
        "france": "What is the capital of France?",
        "c-te-d-ivoire": "What is the capital of Côte d'Ivoire?",
        "peru": "What is the capital of Peru?",
    }
    # Scored like any answer: the prompt is not the capital.
    assert {c["status"] for c in results["cases"]} == {"fail"}
    assert results["provider"]["name"] == "echo"


def test_echo_is_listed_and_needs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert "echo" in SPECS
    assert SPECS["echo"].traits.real is False  # not in `--provider all`
    listed = run_cli(capsys, "providers")
    assert listed.code == 0
    assert "echo" in listed.out


def test_one_default_reply_templated_over_the_row_answers_every_row(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "script.toml"
    script.write_text('[[default]]\ncontent = "{{ capital }}"\n')
    results = _run(
        capsys,
        tmp_path / "out",
        "--provider",
        "scripted",
        "--script",
        str(script),
        "--cases",
        str(suite),
    )
    assert {c["id"]: (c["status"], c["output"]) for c in results["cases"]} == {
        "france": ("pass", "Paris"),
        "c-te-d-ivoire": ("pass", "Yamoussoukro"),
        "peru": ("pass", "Lima"),
    }


def test_a_reply_sees_the_case_id_its_prompt_and_vars_by_any_name(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text("id,a column\nr1,42\n")
    path = tmp_path / "s.toml"
    path.write_text(
        '[suite]\nname = "s"\nkind = "assert"\ncases_from = "rows.csv"\n'
        "[suite.case_template]\ninput = { prompt = \"n={{ vars['a column'] }}\" }\n"
        '[[suite.case_template.assert]]\ntype = "not-contains"\nvalue = "sorry"\n'
    )
    script = tmp_path / "script.toml"
    script.write_text(
        "[[default]]\ncontent = \"{{ case.id }}|{{ case.input.prompt }}|{{ vars['a column'] }}\"\n"
    )
    case_values = run_case_values([load_suite(path)])
    provider = ScriptedProvider(load_script(script), case_values)
    reply = provider.complete(
        CompletionRequest(messages=[Message.user("x")], tag="s/r1"), timeout=5
    )
    assert reply.content == "r1|n=42|42"
    # A side request of the case (its judge) sees the same case.
    side = provider.complete(
        CompletionRequest(messages=[Message.user("x")], tag="s/r1#judge"), timeout=5
    )
    assert side.content == "r1|n=42|42"


def test_tool_call_arguments_are_templates_and_a_whole_placeholder_keeps_its_type(
    tmp_path: Path,
) -> None:
    (tmp_path / "rows.jsonl").write_text('{"id": "r1", "city": "Oslo", "days": 3}\n')
    path = tmp_path / "s.toml"
    path.write_text(
        '[suite]\nname = "s"\nkind = "assert"\ncases_from = "rows.jsonl"\n'
        '[suite.case_template]\ninput = { prompt = "weather in {{ city }}" }\n'
        '[[suite.case_template.assert]]\ntype = "not-contains"\nvalue = "sorry"\n'
    )
    script = tmp_path / "script.toml"
    script.write_text(
        "[[default]]\n"
        'tool_calls = [{ name = "forecast", arguments = '
        '{ city = "{{ city }}", days = "{{ days }}", note = "for {{ days }} days", n = 1 } }]\n'
    )
    provider = ScriptedProvider(load_script(script), run_case_values([load_suite(path)]))
    reply = provider.complete(
        CompletionRequest(messages=[Message.user("x")], tag="s/r1"), timeout=5
    )
    assert reply.tool_calls[0].arguments == {
        "city": "Oslo",
        "days": 3,
        "note": "for 3 days",
        "n": 1,
    }


def test_a_script_without_the_run_s_cases_is_replayed_as_written(tmp_path: Path) -> None:
    script = tmp_path / "script.toml"
    script.write_text('[[default]]\ncontent = "{{ capital }}"\n')
    provider = ScriptedProvider(load_script(script))
    reply = provider.complete(CompletionRequest(messages=[Message.user("x")], tag="t"), timeout=5)
    assert reply.content == "{{ capital }}"


def test_a_reply_naming_a_missing_value_is_exit_2_before_any_case(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "script.toml"
    script.write_text('[[default]]\ncontent = "{{ captial }}"\n')
    out = tmp_path / "out"
    ran = run_cli(
        capsys,
        "run",
        "--provider",
        "scripted",
        "--script",
        str(script),
        "--cases",
        str(suite),
        "--out",
        str(out),
    )
    assert ran.code == 2, ran.out + ran.err
    assert "captial" in ran.err
    assert str(script) in ran.err
    # Said once for the default every row shares, not once per row.
    assert ran.err.count("captial' is undefined") == 1
    assert not (out / "results.json").exists()


def test_a_reply_that_fails_at_run_time_is_a_provider_error(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text("id,x\nr1,1\n")
    path = tmp_path / "s.toml"
    path.write_text(
        '[suite]\nname = "s"\nkind = "assert"\ncases_from = "rows.csv"\n'
        '[suite.case_template]\ninput = { prompt = "{{ x }}" }\n'
        '[[suite.case_template.assert]]\ntype = "not-contains"\nvalue = "sorry"\n'
    )
    script = tmp_path / "script.toml"
    script.write_text('[[default]]\ncontent = "{{ nope }}"\n')
    provider = ScriptedProvider(load_script(script), run_case_values([load_suite(path)]))
    with pytest.raises(ProviderError, match="nope"):
        provider.complete(CompletionRequest(messages=[Message.user("x")], tag="s/r1"), timeout=5)


def test_cases_validate_script_reports_an_unfillable_reply(
    suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "script.toml"
    script.write_text('[[default]]\ncontent = "{{ captial }}"\n')
    checked = run_cli(capsys, "cases", "validate", str(suite), "--script", str(script))
    assert checked.code == 2, checked.out + checked.err
    assert "captial" in checked.err and str(script) in checked.err
    script.write_text('[[default]]\ncontent = "{{ capital }}"\n')
    assert run_cli(capsys, "cases", "validate", str(suite), "--script", str(script)).code == 0


def test_echo_is_no_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        '[suite]\nname = "s"\nkind = "assert"\n[[case]]\nid = "a"\ninput = { prompt = "hi" }\n'
        '[[case.assert]]\ntype = "judge"\nrubric = "Friendly."\n'
    )
    out = tmp_path / "out"
    ran = run_cli(
        capsys,
        "run",
        "--provider",
        "echo",
        "--cases",
        str(path),
        "--out",
        str(out),
        "--no-progress",
    )
    assert ran.code == 3  # the judged case ends in error, as any unanswered judge does
    (case,) = json.loads((out / "results.json").read_text())["cases"]
    (check,) = case["checks"]
    assert check["status"] == "error"
    assert "echo cannot answer a side request" in check["message"]
    assert "[judge] provider" in check["message"]
