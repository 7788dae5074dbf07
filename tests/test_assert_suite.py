"""`kind = "assert"` suites end to end: the issue's example as written, from another
working directory, with its fixture-backed tool recorded by the spy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalctl.cases.loader import load_suite
from evalctl.config import Settings
from evalctl.runner.suite_tools import suite_tools
from evalctl.tools.base import ToolContext
from tests.assert_helpers import ISSUE_REPLIES, evalctl, write_issue_suite


def test_the_issue_example_validates_and_runs_from_another_directory(tmp_path: Path) -> None:
    suite = write_issue_suite(tmp_path)
    replies = tmp_path / "replies.toml"
    replies.write_text(ISSUE_REPLIES)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    checked = evalctl(elsewhere, "cases", "validate", str(suite))
    assert checked.returncode == 0, checked.stderr
    assert "1 case in 1 suite" in checked.stdout

    ran = evalctl(
        elsewhere,
        "run",
        "--provider",
        "scripted",
        "--script",
        str(replies),
        "--cases",
        str(suite),
        "--out",
        "out",
        "--json",
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["summary"]["passed"] == 1
    case = json.loads((elsewhere / "out" / "results.json").read_text())["cases"][0]
    assert case["status"] == "pass"
    assert [c["name"] for c in case["checks"]] == [
        "output_schema",
        "json-field:city",
        "tool-called:weather",
    ]
    # The spy recorded the call: its arguments and the value the fixture returned.
    (call,) = case["tool_calls"]
    assert call["arguments"] == {"city": "Paris"}
    assert call["data"]["value"] == {"temp_c": 18, "sky": "cloudy"}
    assert call["is_error"] is False


def test_paths_resolve_against_the_suite_file_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_issue_suite(tmp_path)
    monkeypatch.chdir(tmp_path)
    loaded = load_suite(Path("suite/capitals.toml"))  # relative to the cwd of the moment
    monkeypatch.chdir(tmp_path / "suite" / "fixtures")  # then the cwd moves
    weather = suite_tools(loaded)["weather"]
    ctx = ToolContext(case=loaded.cases[0], fixtures_dir=Path("unused"), settings=Settings())
    assert json.loads(weather.run({"city": "Paris"}, ctx).content)["sky"] == "cloudy"


BROKEN = """
[suite]
name = "broken"
kind = "assert"
tools = ["weather", "lookup_order"]
output_schema = { type = "objekt" }

[[suite.tool]]
name = "weather"
description = "Weather"
fixture = "fixtures/missing.json"
key = "city"

[[case]]
id = "one"
input = { prompt = "hi", messages = [{ role = "user", content = "hi" }] }
[[case.assert]]
type = "json-field"
path = "city"
equals = "Paris"
tolerance = 1
[[case.assert]]
type = "containz"
value = "x"

[[case]]
id = "two"
input = { prompt = "hi" }
[[case.assert]]
type = "tool-called"
name = "wether"
"""


def test_validate_reports_every_error_of_every_file(tmp_path: Path) -> None:
    (tmp_path / "broken.toml").write_text(BROKEN)
    (tmp_path / "also.toml").write_text(BROKEN.replace('"broken"', '"also"'))
    checked = evalctl(tmp_path, "cases", "validate", ".")
    assert checked.returncode == 2
    assert "Traceback" not in checked.stderr
    lines = checked.stderr.replace("error: ", "").splitlines()
    expected = [
        "field 'suite.tools': unknown tool 'lookup_order' (known: extract_pattern,",
        "field 'suite.tool[1].fixture': fixture file not found:",
        "field 'suite.tool[1].key': 'city' is not one of the tool's parameters (known: none)",
        "field 'suite.output_schema': invalid JSON Schema:",
        "case 'one': field 'case.input': give exactly one of prompt, messages",
        "case 'one': field 'case.assert[1].tolerance': unknown key",
        "case 'one': field 'case.assert[2].type': unknown assertion type 'containz' "
        "(known: cites-tool-result, contains,",
        "case 'two': field 'case.assert[1].name': unknown tool 'wether' "
        "(suite tools: weather, lookup_order)",
    ]
    for name in ("also.toml", "broken.toml"):
        for needle in expected:
            assert any(name in line and needle in line for line in lines), (needle, lines)
    assert len(lines) == 2 * len(expected)


def test_a_reply_script_key_that_matches_no_case_is_an_error(tmp_path: Path) -> None:
    suite = write_issue_suite(tmp_path)
    typo = tmp_path / "typo.toml"
    typo.write_text(ISSUE_REPLIES.replace("capitals/france", "capitals/frnace", 1))
    for args in (
        ["cases", "validate", str(suite), "--script", str(typo)],
        ["run", "--provider", "scripted", "--script", str(typo), "--cases", str(suite)],
    ):
        proc = evalctl(tmp_path, *args)
        assert proc.returncode == 2, proc.stderr
        assert "'capitals/frnace' matches no case (known: capitals/france)" in proc.stderr
        assert str(typo) in proc.stderr and "Traceback" not in proc.stderr
    # A bare id, and a case's side requests (`#judge`), are keys that match.
    fine = tmp_path / "fine.toml"
    fine.write_text(
        ISSUE_REPLIES.replace("capitals/france", "france", 1)
        + '\n[[cases."capitals/france#judge"]]\ncontent = "{}"\n'
    )
    assert evalctl(tmp_path, "cases", "validate", str(suite), "--script", str(fine)).returncode == 0
