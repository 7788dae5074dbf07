"""`tool-called` matches a call's arguments per key: an exact value (`args`), a regex
(`args_match`) or a JSON Schema (`args_schema`). A call matches when it meets all of them, a
failure names the argument and why, and a bad pattern or schema is refused at load, located."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalctl.assertions.kind import KIND, AssertInput, NoExpected
from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import CompletionResponse
from evalctl.plugin_loader import check_types
from evalctl.results.models import CheckResult, ToolCallRecord
from evalctl.scoring.check import Transcript
from evalctl.scoring.declared import parse_assertion, parse_assertions
from tests.scoring_helpers import score_all

TOOLS = ["weather"]


def call(**arguments: Any) -> ToolCallRecord:
    return ToolCallRecord(turn=1, name="weather", arguments=arguments, result="{}", duration_ms=1)


def check(table: dict[str, Any], calls: list[ToolCallRecord]) -> CheckResult:
    spec, problems = parse_assertion({"type": "tool-called", **table}, check_types(), TOOLS)
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
    transcript = Transcript([], [CompletionResponse(content="")], calls)
    (result,) = score_all(KIND, case, transcript, suite=SuiteTable(name="s", kind="assert"))
    return result


def test_args_match_is_a_regex_searched_in_the_arguments_string_value() -> None:
    table = {"name": "weather", "args_match": {"city": "^Par"}}
    assert check(table, [call(city="Paris")]).status == "pass"
    failed = check(table, [call(city="Lyon")])
    assert failed.status == "fail"
    assert failed.message == (
        "'weather' was called 1 time(s), none matching: call 1: city: /^Par/ does not match 'Lyon'"
    )
    # Searched, as the `regex` assertion is: anchor it to match the whole value.
    assert check({"name": "weather", "args_match": {"city": "ari"}}, [call(city="Paris")]).passed


def test_args_match_on_a_value_that_is_not_a_string_fails_saying_so() -> None:
    failed = check({"name": "weather", "args_match": {"days": "^3$"}}, [call(days=3)])
    assert failed.status == "fail"
    assert "days: expected a string to match /^3$/, got 3" in failed.message


def test_args_schema_validates_each_argument_against_its_own_schema() -> None:
    table = {
        "name": "weather",
        "args_schema": {
            "city": {"type": "string", "enum": ["Paris", "Lyon"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 7},
        },
    }
    assert check(table, [call(city="Lyon", days=3)]).status == "pass"
    failed = check(table, [call(city="Rome", days=30)])
    assert failed.status == "fail"
    assert "city: 'Rome' is not one of ['Paris', 'Lyon'] (args_schema)" in failed.message
    assert "days: 30 is greater than the maximum of 7 (args_schema)" in failed.message
    nested = check(
        {"name": "weather", "args_schema": {"where": {"properties": {"lat": {"type": "number"}}}}},
        [call(where={"lat": "north"})],
    )
    # The path inside the argument is named too.
    assert "where.lat: 'north' is not of type 'number' (args_schema)" in nested.message


def test_a_missing_argument_fails_whatever_the_test() -> None:
    tables: list[dict[str, Any]] = [
        {"args": {"city": "Paris"}},
        {"args_match": {"city": "."}},
        {"args_schema": {"city": {}}},
    ]
    for table in tables:
        failed = check({"name": "weather", **table}, [call(days=1)])
        assert failed.status == "fail"
        assert failed.message.endswith("call 1: city: missing"), failed.message


def test_a_call_matches_only_when_it_meets_every_key_and_times_counts_those() -> None:
    table = {
        "name": "weather",
        "args": {"units": "metric"},
        "args_match": {"city": "^P"},
        "args_schema": {"days": {"type": "integer"}},
    }
    calls = [
        call(city="Paris", units="metric", days=2),
        call(city="Prague", units="imperial", days=2),
        call(city="Lyon", units="metric", days=2),
        call(city="Porto", units="metric", days=2),
    ]
    assert check({**table, "times": 2}, calls).status == "pass"
    three = check({**table, "times": 3}, calls)
    assert three.status == "fail"
    assert three.message == (
        "2 matching call(s), expected 3 (call 2: units: expected 'metric', got 'imperial'; "
        "call 3: city: /^P/ does not match 'Lyon')"
    )
    assert three.expected == {
        "name": "weather",
        "args": {"units": "metric"},
        "args_match": {"city": "^P"},
        "args_schema": {"days": {"type": "integer"}},
        "times": 3,
    }


@pytest.mark.parametrize(
    ("table", "field", "needle"),
    [
        ({"args_match": {"city": "("}}, "[1].args_match", "city: invalid regular expression"),
        (
            {"args_schema": {"city": {"type": "strang"}}},
            "[1].args_schema",
            "city: invalid JSON Schema",
        ),
        ({"args_match": {"city": 3}}, "[1].args_match.city", "valid string"),
        ({"args_schema": {"city": "string"}}, "[1].args_schema.city", "valid dictionary"),
        ({"args_match": {"cty": "x"}}, "[1].args_match.cty", "'weather' has no parameter 'cty'"),
        ({"args_schema": {"cty": {}}}, "[1].args_schema.cty", "'weather' has no parameter 'cty'"),
    ],
)
def test_bad_patterns_schemas_and_names_are_refused_where_written(
    table: dict[str, Any], field: str, needle: str
) -> None:
    items = [{"type": "tool-called", "name": "weather", **table}]
    _, problems = parse_assertions(items, check_types(), TOOLS, {"weather": ["city", "days"]})
    assert any(f == field and needle in m for f, m in problems), problems


# Scores one tool-called assertion against one call, as the runner does, and prints it.
SCORE = """\
import json, sys
from tests.test_tool_called_args import call, check
result = check(json.loads(sys.argv[1]), [call(city=sys.argv[2])])
print(json.dumps({"status": result.status, "message": result.message}))
"""


def test_a_runaway_pattern_ends_the_check_in_error_instead_of_hanging() -> None:
    # Exponential in any backtracking engine: this never finishes without the bound.
    table = {"name": "weather", "args_match": {"city": "^(a|aa)+$"}}
    # A subprocess with a generous timeout: if the bound ever broke, this test fails instead
    # of hanging the suite.
    done = subprocess.run(
        [sys.executable, "-c", SCORE, json.dumps(table), "a" * 80 + "!"],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["status"] == "error"
    assert "/^(a|aa)+$/ did not finish" in result["message"]
