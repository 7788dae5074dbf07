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
    assert "1 cases in 1 suites" in checked.stdout

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
