"""Every assertion type of the `assert` kind passes on a right answer and fails on a wrong
one with expected, actual and a reason; parameters are validated strictly."""

from __future__ import annotations

from typing import Any

import pytest

from evalctl.assertions import grounding, json_checks, text, tool_use
from evalctl.assertions.grounding import cites
from evalctl.assertions.kind import KIND, AssertInput, NoExpected
from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import CompletionResponse
from evalctl.plugin_loader import check_types
from evalctl.results.models import CheckResult, ToolCallRecord
from evalctl.scoring.check import Transcript
from evalctl.scoring.declared import parse_assertion
from evalctl.scoring.declared import parse_assertions as parse_with
from tests.scoring_helpers import score_all

TOOLS = ["weather", "lookup_order"]

WEATHER_CALL = ToolCallRecord(
    turn=1,
    name="weather",
    arguments={"city": "Paris", "units": "metric"},
    result='{"sky": "cloudy", "temp_c": 18.0}',
    data={"value": {"sky": "cloudy", "temp_c": 18.0}},
    duration_ms=1.0,
)
FAILED_ORDER_CALL = ToolCallRecord(
    turn=1,
    name="lookup_order",
    arguments={"order_id": "A-404"},
    result="error: no result for order_id='A-404'",
    is_error=True,
    duration_ms=1.0,
)

# The spy refused it: `units` is outside the enum of the tool's parameters.
REFUSED_WEATHER_CALL = ToolCallRecord(
    turn=1,
    name="weather",
    arguments={"city": "Paris", "units": "kelvin"},
    result="error: invalid arguments for 'weather': units: 'kelvin' is not one of ['metric']",
    is_error=True,
    invalid_arguments=["units: 'kelvin' is not one of ['metric']"],
    duration_ms=1.0,
)


def parse_assertions(
    items: list[Any], tools: list[str] | None, tool_args: dict[str, list[str]] | None = None
) -> Any:
    return parse_with(items, check_types(), tools, tool_args)


def check(table: dict[str, Any], answer: str, calls: list[ToolCallRecord]) -> CheckResult:
    spec, problems = parse_assertion(table, check_types(), TOOLS)
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
    transcript = Transcript([], [CompletionResponse(content=answer)], calls)
    (result,) = score_all(KIND, case, transcript, suite=SuiteTable(name="s", kind="assert"))
    return result


# (assertion table, an answer and calls that pass, an answer and calls that fail)
CASES: list[
    tuple[dict[str, Any], tuple[str, list[ToolCallRecord]], tuple[str, list[ToolCallRecord]]]
] = [
    ({"type": "equals", "value": "Paris"}, (" Paris\n", []), ("paris", [])),
    ({"type": "contains", "value": "Paris"}, ("It is Paris.", []), ("It is paris.", [])),
    ({"type": "icontains", "value": "PARIS"}, ("It is paris.", []), ("It is Rome.", [])),
    ({"type": "not-contains", "value": "sorry"}, ("Paris.", []), ("I'm sorry.", [])),
    ({"type": "regex", "pattern": r"^\d{3}-\d{4}$"}, ("555-0199", []), ("555 0199", [])),
    ({"type": "json-valid"}, ('{"a": 1}', []), ('{"a": 1', [])),
    (
        {"type": "json-schema", "schema": {"type": "object", "required": ["city"]}},
        ('```json\n{"city": "Paris"}\n```', []),
        ('{"town": "Paris"}', []),
    ),
    (
        {"type": "json-field", "path": "city", "equals": "Paris"},
        ('{"city": "Paris"}', []),
        ('{"city": "Rome"}', []),
    ),
    (
        {"type": "json-field", "path": "tags.0", "one_of": ["billing", "refund"]},
        ('{"tags": ["refund"]}', []),
        ('{"tags": ["spam"]}', []),
    ),
    (
        {"type": "json-field", "path": "id", "regex": "^A-"},
        ('{"id": "A-1"}', []),
        ('{"id": "B-1"}', []),
    ),
    (
        {"type": "json-field", "path": "score", "min": 0, "max": 1},
        ('{"score": 0.5}', []),
        ('{"score": 1.5}', []),
    ),
    (
        {"type": "tool-called", "name": "weather", "args": {"city": "Paris"}},
        ("", [WEATHER_CALL]),
        ("", []),
    ),
    (
        {"type": "tool-called", "name": "weather", "times": 2},
        ("", [WEATHER_CALL, WEATHER_CALL]),
        ("", [WEATHER_CALL]),
    ),
    (
        {"type": "tool-not-called", "name": "weather"},
        ("", [FAILED_ORDER_CALL]),
        ("", [WEATHER_CALL]),
    ),
    ({"type": "tool-not-called"}, ("", []), ("", [FAILED_ORDER_CALL])),
    (
        {"type": "tool-args-valid", "name": "weather"},
        ("", [WEATHER_CALL, REFUSED_WEATHER_CALL.model_copy(update={"name": "lookup_order"})]),
        ("", [WEATHER_CALL, REFUSED_WEATHER_CALL]),
    ),
    (
        {"type": "cites-tool-result", "tool": "weather", "path": "temp_c"},
        ("It is 18 degrees and cloudy.", [WEATHER_CALL]),
        ("It is 21 degrees.", [WEATHER_CALL]),
    ),
    (
        {"type": "cites-tool-result", "tool": "lookup_order"},
        (
            "It has shipped.",
            [
                WEATHER_CALL,
                FAILED_ORDER_CALL,
                FAILED_ORDER_CALL.model_copy(
                    update={"is_error": False, "result": '"shipped"', "data": {}}
                ),
            ],
        ),
        ("The order shipped.", [FAILED_ORDER_CALL]),
    ),
]


@pytest.mark.parametrize(
    ("table", "good", "bad"), CASES, ids=lambda v: str(v)[:40] if isinstance(v, dict) else ""
)
def test_each_type_passes_and_fails_with_a_reason(
    table: dict[str, Any],
    good: tuple[str, list[ToolCallRecord]],
    bad: tuple[str, list[ToolCallRecord]],
) -> None:
    passed = check(table, *good)
    assert passed.status == "pass", passed
    assert passed.message == ""
    failed = check(table, *bad)
    assert failed.status == "fail", failed
    assert failed.message, "a failed check says why"
    assert failed.expected is not None
    assert table["type"] in failed.name


def test_every_built_in_type_is_covered_above() -> None:
    families = (text, json_checks, tool_use, grounding)
    built_in = {check.type_name for family in families for check in family.CHECKS}
    assert {c[0]["type"] for c in CASES} == built_in
    # Each is registered under the name its class gives (the registry is built from them).
    assert built_in <= set(check_types().names())


def test_name_weight_and_check_name() -> None:
    named = check({"type": "contains", "value": "x", "name": "mentions-x", "weight": 2}, "x", [])
    assert (named.name, named.weight) == ("mentions-x", 2.0)
    # tool-called uses `name` for the tool, so its check is named with `check_name`.
    tool = check(
        {"type": "tool-called", "name": "weather", "check_name": "asked"}, "", [WEATHER_CALL]
    )
    assert tool.name == "asked"


def test_tool_checks_report_expected_and_calls_with_the_assertions_own_keys() -> None:
    table = {"type": "tool-called", "name": "weather", "args": {"city": "Rome"}, "times": 1}
    failed = check(table, "", [WEATHER_CALL])
    assert failed.status == "fail"
    assert failed.expected == {"name": "weather", "args": {"city": "Rome"}, "times": 1}
    assert set(failed.expected) <= set(table)
    called = check({"type": "tool-not-called", "name": "weather"}, "", [WEATHER_CALL])
    assert [set(c) for c in called.actual] == [{"name", "args"}]


def test_json_equality_is_exact() -> None:
    # true is not 1 in JSON; 1 and 1.0 are the same number.
    assert check({"type": "json-field", "path": "ok", "equals": 1}, '{"ok": true}', []).failed
    assert not check({"type": "json-field", "path": "n", "equals": 1}, '{"n": 1.0}', []).failed


def test_missing_path_and_non_json_fail_saying_so() -> None:
    missing = check({"type": "json-field", "path": "a.b", "equals": 1}, '{"a": {}}', [])
    assert missing.message == "no field at path 'a.b'"
    prose = check({"type": "json-field", "path": "a", "equals": 1}, "Sure! a is 1", [])
    assert prose.message.startswith("not JSON")


@pytest.mark.parametrize(
    ("table", "field", "needle"),
    [
        ({"type": "contains"}, "[1].value", "required key is missing"),
        ({"type": "contains", "value": "x", "valeu": "y"}, "[1].valeu", "unknown key"),
        ({"type": "containz", "value": "x"}, "[1].type", "known: cites-tool-result, contains"),
        ({"value": "x"}, "[1].type", "required key is missing"),
        ({"type": "regex", "pattern": "("}, "[1].pattern", "invalid regular expression"),
        ({"type": "json-field", "path": "a"}, "[1]", "exactly one of equals"),
        ({"type": "json-field", "path": "a", "equals": 1, "min": 0}, "[1]", "found: equals, min"),
        (
            {"type": "json-schema", "schema": {"type": "objekt"}},
            "[1].schema",
            "invalid JSON Schema",
        ),
        (
            {"type": "tool-called", "name": "wether"},
            "[1].name",
            "unknown tool 'wether' (suite tools: weather, lookup_order)",
        ),
        ({"type": "cites-tool-result", "tool": "x"}, "[1].tool", "unknown tool 'x'"),
        ({"type": "contains", "value": "x", "weight": 0}, "[1].weight", "above 0"),
        (
            {"type": "tool-called", "name": "weather", "times": -1},
            "[1].times",
            "greater than or equal to 0",
        ),
    ],
)
def test_bad_parameters_are_located(table: dict[str, Any], field: str, needle: str) -> None:
    _, problems = parse_assertions([table], TOOLS)
    assert any(f == field and needle in m for f, m in problems), problems


def test_every_problem_of_every_assertion_is_reported() -> None:
    specs, problems = parse_assertions(
        [
            {"type": "contains", "value": "ok"},
            {"type": "contains", "valeu": "x"},
            {"type": "nope"},
        ],
        TOOLS,
    )
    assert len(specs) == 1
    assert [f for f, _ in problems] == ["[2].value", "[2].valeu", "[3].type"]


def test_cites_matches_numbers_by_their_spelling_and_objects_by_every_leaf() -> None:
    assert cites("about 18 C", 18.0)
    assert cites("Status: SHIPPED", "shipped")
    assert cites("cloudy, 18", {"sky": "cloudy", "temp_c": 18})
    assert not cites("cloudy", {"sky": "cloudy", "temp_c": 18})
    assert not cites("anything", None)


def test_cites_uses_the_grounding_primitive_whole_words_not_substrings() -> None:
    # The same matching as the sommelier's grounding check (evalctl.scoring.grounding).
    assert not cites("It is 210 km away", 21)  # a number is a whole number
    assert not cites("Order A21 shipped", 21)
    assert cites("the total is 1,200 dollars", 1200)
    assert not cites("Parisian weather", "Paris")  # a word is a whole word
    assert cites("Nero d'Avola by Planeta", "Planeta Nero d\u2019Avola")  # order, apostrophes
    assert not cites("Fake Estate Reserve", "Tignanello")


def test_expected_arguments_must_be_parameters_of_the_tool() -> None:
    table = {"type": "tool-called", "name": "weather", "args": {"cty": "Paris", "city": "Rome"}}
    _, problems = parse_assertions([table], TOOLS, {"weather": ["city", "units"]})
    assert problems == [("[1].args.cty", "'weather' has no parameter 'cty' (known: city, units)")]
    # A tool whose parameters are not known (a plugin's) is not second-guessed.
    assert parse_assertions([table], TOOLS, {})[1] == []


def test_cites_tool_result_says_whether_the_tool_was_never_called_or_only_failed() -> None:
    # Two different things to fix: the model skipped the tool, or every call it made failed.
    table = {"type": "cites-tool-result", "tool": "lookup_order"}
    never = check(table, "It shipped.", [WEATHER_CALL])
    assert never.status == "fail"
    assert never.message == "'lookup_order' was not called in this case"
    failed = check(table, "It shipped.", [FAILED_ORDER_CALL, FAILED_ORDER_CALL])
    assert failed.status == "fail"
    assert "every call to 'lookup_order' returned an error (2)" in failed.message
