"""The spy checks a call's arguments against the tool's `parameters` before the tool runs:
invalid ones go back to the model as a tool error and are recorded `invalid_arguments`; a
lenient tool runs anyway, the finding still recorded. `tool-args-valid` judges them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalctl.assertions.kind import AssertInput, NoExpected
from evalctl.cases.schema import Case
from evalctl.chat import ToolCall, ToolDef
from evalctl.config import Settings
from evalctl.tools.base import Tool, ToolContext, ToolOutput, ToolSpy
from tests.cli_helpers import run_cli

PARAMETERS = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "required": ["city"],
}


class Weather(Tool):
    """A tool that answers whatever it is given, and counts its runs."""

    definition = ToolDef(name="weather", description="", parameters=PARAMETERS)

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        self.runs.append(arguments)
        return ToolOutput(content="18")


class LenientWeather(Weather):
    lenient_arguments = True


def spy_for(tool: Weather, tmp_path: Path) -> ToolSpy:
    case = Case(
        suite="s",
        id="c",
        description="",
        features=[],
        input=AssertInput(prompt="?"),
        expected=NoExpected(),
        checks=[],
        timeout_s=None,
    )
    ctx = ToolContext(case=case, fixtures_dir=tmp_path, settings=Settings())
    return ToolSpy({"weather": tool}, ctx)


KELVIN = ToolCall(id="1", name="weather", arguments={"city": "Oslo", "unit": "kelvin"})


def test_invalid_arguments_never_reach_the_tool(tmp_path: Path) -> None:
    tool = Weather()
    spy = spy_for(tool, tmp_path)
    result = spy.execute(KELVIN, 1)
    assert result.is_error
    assert "unit" in result.content and "kelvin" in result.content
    assert tool.runs == []
    (record,) = spy.records
    assert record.is_error
    assert record.invalid_arguments and record.invalid_arguments[0].startswith("unit:")

    fine = spy.execute(ToolCall(id="2", name="weather", arguments={"city": "Oslo"}), 1)
    assert (fine.is_error, fine.content) == (False, "18")
    assert spy.records[1].invalid_arguments == []
    assert tool.runs == [{"city": "Oslo"}]


def test_a_lenient_tool_runs_and_the_finding_is_still_recorded(tmp_path: Path) -> None:
    tool = LenientWeather()
    spy = spy_for(tool, tmp_path)
    result = spy.execute(KELVIN, 1)
    assert not result.is_error
    assert tool.runs == [KELVIN.arguments]
    assert spy.records[0].invalid_arguments


SUITE = """\
[suite]
name = "w"
kind = "assert"
tools = ["weather"]

[[suite.tool]]
name = "weather"
description = "Current weather"
fixture = "fixtures/weather.json"
key = "city"
[suite.tool.parameters]
type = "object"
required = ["city"]
properties.city = { type = "string" }
properties.unit = { type = "string", enum = ["celsius", "fahrenheit"] }

[[case]]
id = "oslo"
input = { prompt = "Weather in Oslo, in kelvin?" }
[[case.assert]]
type = "tool-args-valid"
"""

REPLIES = """\
[[cases."w/oslo"]]
tool_calls = [{ name = "weather", arguments = { city = "Oslo", unit = "kelvin" } }]

[[cases."w/oslo"]]
content = "18"
"""


def test_the_issue_probe_is_refused_and_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "weather.json").write_text('{"Oslo": {"temp_c": 4}}')
    (tmp_path / "w.toml").write_text(SUITE)
    (tmp_path / "replies.toml").write_text(REPLIES)
    ran = run_cli(
        capsys,
        "run",
        "--provider",
        "scripted",
        "--script",
        "replies.toml",
        "--cases",
        "w.toml",
        "--out",
        "out",
        "--json",
    )
    assert ran.code == 0, ran.err
    (case,) = json.loads((tmp_path / "out" / "results.json").read_text())["cases"]
    (call,) = case["tool_calls"]
    assert call["is_error"] is True
    assert call["data"] == {}  # the fixture was never read
    assert call["invalid_arguments"]
    (check,) = case["checks"]
    assert (check["name"], check["status"]) == ("tool-args-valid:*", "fail")
    assert "kelvin" in check["message"]


class BrokenSchema(Weather):
    definition = ToolDef(name="weather", description="", parameters={"type": "foo"})


def test_a_tool_whose_schema_cannot_be_checked_runs_unchecked(tmp_path: Path) -> None:
    tool = BrokenSchema()
    result = spy_for(tool, tmp_path).execute(KELVIN, 1)
    assert (result.is_error, result.content) == (False, "18")
    assert tool.runs == [KELVIN.arguments]
