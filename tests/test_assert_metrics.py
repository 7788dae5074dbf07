"""The `latency`, `cost` and `tokens` assertions judge the attempt's measurements: within the
bound passes, over it fails saying by how much, not measured is `n/a`. Latency bounds here
cannot depend on machine speed: a huge bound always passes, zero always fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalctl.assertions.kind import KIND, AssertInput, NoExpected
from evalctl.cases.schema import Case
from evalctl.chat import CompletionResponse, Usage
from evalctl.plugin_loader import check_types, get_check
from evalctl.results.models import CheckResult
from evalctl.scoring.check import Transcript
from evalctl.scoring.declared import parse_assertion
from evalctl.scoring.score import score_case
from tests.cli_helpers import evalctl
from tests.scoring_helpers import context


def judged(table: dict[str, Any], **measured: Any) -> CheckResult:
    spec, problems = parse_assertion(table, check_types(), [])
    assert spec is not None, problems
    case = Case(
        suite="s",
        id="c",
        description="",
        features=[],
        input=AssertInput(prompt="?"),
        expected=NoExpected(),
        checks=[],
        timeout_s=None,
        assertions=[spec],
    )
    ctx = context(case, Transcript([], [CompletionResponse(content="ok")]), **measured)
    (result,) = score_case(ctx, KIND.checks, get_check)
    return result


USAGE = Usage(input_tokens=120, output_tokens=30)


@pytest.mark.parametrize(
    ("table", "measured", "status"),
    [
        ({"type": "latency", "max_ms": 500}, {"latency_ms": 499.9}, "pass"),
        ({"type": "latency", "max_ms": 500}, {"latency_ms": 500.1}, "fail"),
        ({"type": "latency", "max_ms": 500}, {}, "n/a"),
        ({"type": "cost", "max_usd": 0.01}, {"cost_usd": 0.0099}, "pass"),
        ({"type": "cost", "max_usd": 0.01}, {"cost_usd": 0.02}, "fail"),
        ({"type": "cost", "max_usd": 0.01}, {"usage": USAGE}, "n/a"),
        ({"type": "tokens", "max_input": 120, "max_output": 30}, {"usage": USAGE}, "pass"),
        ({"type": "tokens", "max_total": 149}, {"usage": USAGE}, "fail"),
        ({"type": "tokens", "max_output": 29}, {"usage": USAGE}, "fail"),
        ({"type": "tokens", "max_total": 150}, {}, "n/a"),
    ],
)
def test_a_bound_passes_within_fails_over_and_is_na_unmeasured(
    table: dict[str, Any], measured: dict[str, Any], status: str
) -> None:
    result = judged(table, **measured)
    assert result.status == status
    if status == "fail":
        assert "over" in result.message


def test_a_failed_token_bound_names_the_part_that_is_over() -> None:
    result = judged({"type": "tokens", "max_input": 200, "max_output": 10}, usage=USAGE)
    assert result.status == "fail"
    assert result.actual == {"input": 120, "output": 30}
    assert "output 30 > 10" in result.message
    assert "input" not in result.message.split("over:")[1]


@pytest.mark.parametrize(
    "table",
    [
        {"type": "tokens"},
        {"type": "tokens", "max_totl": 5},
        {"type": "latency", "max_ms": -1},
        {"type": "cost"},
    ],
)
def test_bad_parameters_are_rejected(table: dict[str, Any]) -> None:
    spec, problems = parse_assertion(table, check_types(), [])
    assert spec is None
    assert problems


SUITE = """\
[suite]
name = "m"
kind = "assert"

[[case]]
id = "c"
input = { prompt = "Say hi" }
[[case.assert]]
type = "tokens"
max_output = 2
[[case.assert]]
type = "tokens"
name = "few-output"
max_output = 1
[[case.assert]]
type = "latency"
name = "huge"
max_ms = 1e9
[[case.assert]]
type = "latency"
name = "zero"
max_ms = 0
[[case.assert]]
type = "cost"
max_usd = 1
"""


def test_a_run_measures_the_attempt(tmp_path: Path) -> None:
    (tmp_path / "m.toml").write_text(SUITE)
    # The scripted provider counts words: a two-word reply is two output tokens.
    (tmp_path / "replies.toml").write_text('[[cases."m/c"]]\ncontent = "hi there"\n')
    ran = evalctl(
        tmp_path,
        "run",
        "--provider",
        "scripted",
        "--script",
        "replies.toml",
        "--cases",
        "m.toml",
        "--out",
        "out",
    )
    # A failed case is a result, not a failed run (no gate is asked for).
    assert ran.returncode == 0, ran.stderr
    (case,) = json.loads((tmp_path / "out" / "results.json").read_text())["cases"]
    statuses = {check["name"]: check["status"] for check in case["checks"]}
    assert statuses == {
        "tokens": "pass",
        "few-output": "fail",
        "huge": "pass",
        "zero": "fail",
        # The scripted provider is not billed: no estimate to judge.
        "cost": "n/a",
    }
