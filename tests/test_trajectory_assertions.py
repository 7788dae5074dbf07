"""Assertions on the path an agent took (tool-sequence, tool-count, tool-error, max-steps,
tool-f1): each passes, fails saying what was called in order, matches calls as tool-called
does (any-order and tool-f1 by a maximum matching, not greedily), validates its parameters
where they are written, and runs end to end through `evalctl run`."""

from __future__ import annotations

import itertools
import json
import random
import tomllib
from pathlib import Path
from typing import Any

import pytest

from evalctl.assertions.kind import KIND, AssertInput, NoExpected
from evalctl.assertions.trajectory import f1_scores, maximum_matching
from evalctl.cases.schema import AssertionSpec, Case, SuiteTable
from evalctl.chat import CompletionResponse
from evalctl.plugin_loader import check_types
from evalctl.results.models import CheckResult, ToolCallRecord
from evalctl.scoring.check import Transcript
from evalctl.scoring.declared import parse_assertion, parse_assertions
from tests.cli_helpers import evalctl
from tests.conftest import REPO
from tests.scoring_helpers import score_all
from tests.target_helpers import run_suite, unique, write

TOOLS = ["search", "get_wine", "pair"]


def call(name: str, is_error: bool = False, **arguments: Any) -> ToolCallRecord:
    result = "error: no such wine" if is_error else "{}"
    return ToolCallRecord(
        turn=1, name=name, arguments=arguments, result=result, is_error=is_error, duration_ms=1
    )


def check(
    type_name: str, table: dict[str, Any], calls: list[ToolCallRecord], turns: int = 1
) -> CheckResult:
    spec, problems = parse_assertion({"type": type_name, **table}, check_types(), TOOLS)
    assert spec is not None, problems
    responses = [CompletionResponse(content="") for _ in range(turns)]
    transcript = Transcript([], responses, calls)
    (result,) = score_all(
        KIND, _case([spec]), transcript, suite=SuiteTable(name="s", kind="assert")
    )
    return result


def _case(assertions: list[AssertionSpec]) -> Case:
    return Case(
        suite="s",
        id="c",
        description="",
        features=[],
        input=AssertInput(prompt="?"),
        expected=NoExpected(),
        checks=[],
        timeout_s=None,
        assertions=assertions,
    )


SEARCH_RED = call("search", color="red")
GET_3 = call("get_wine", id=3)
GET_4 = call("get_wine", id=4)
PAIR = call("pair", dish="lamb")
CALLED = (
    'called, in order: 1. search{"color": "red"}, 2. get_wine{"id": 3}, 3. pair{"dish": "lamb"}'
)


# tool-sequence


def seq(order: str, *steps: dict[str, Any]) -> dict[str, Any]:
    return {"order": order, "steps": list(steps)}


def test_exact_passes_only_on_these_calls_and_no_other_in_this_order() -> None:
    steps = ({"name": "search", "args": {"color": "red"}}, {"name": "get_wine"})
    assert check("tool-sequence", seq("exact", *steps), [SEARCH_RED, GET_3]).status == "pass"
    extra = check("tool-sequence", seq("exact", *steps), [SEARCH_RED, GET_3, PAIR])
    assert extra.status == "fail"
    assert extra.message == f"2 step(s) expected exactly, 3 call(s) made; {CALLED}"
    swapped = check("tool-sequence", seq("exact", *steps), [GET_3, SEARCH_RED])
    assert swapped.status == "fail"
    assert swapped.message.startswith(
        'call 1 is \'get_wine\', step 1 expects search{"args": {"color": "red"}}; '
        'called, in order: 1. get_wine{"id": 3}, 2. search{"color": "red"}'
    )
    wrong_arg = check("tool-sequence", seq("exact", *steps), [call("search", color="white"), GET_3])
    assert wrong_arg.status == "fail"
    assert wrong_arg.message.startswith(
        "call 1 ('search') does not match step 1: color: expected 'red', got 'white'; "
    )


def test_in_order_allows_other_calls_between_the_steps() -> None:
    table = seq("in-order", {"name": "search"}, {"name": "pair", "args_match": {"dish": "^la"}})
    assert check("tool-sequence", table, [SEARCH_RED, GET_3, PAIR]).status == "pass"
    reversed_ = check("tool-sequence", table, [PAIR, GET_3, SEARCH_RED])
    assert reversed_.status == "fail"
    assert reversed_.message.startswith(
        'step 2 (pair{"args_match": {"dish": "^la"}}) matched no call after call 3; '
        'called, in order: 1. pair{"dish": "lamb"}, 2. get_wine{"id": 3}, 3. search'
    )
    assert check("tool-sequence", table, []).message == (
        "step 1 (search) matched no call; no tool was called"
    )


def test_in_order_is_the_default_and_a_step_is_matched_by_a_later_call_with_its_arguments() -> None:
    # The first get_wine has the wrong id: the step waits for one that matches.
    table = {"steps": [{"name": "get_wine", "args": {"id": 4}}, {"name": "pair"}]}
    assert check("tool-sequence", table, [GET_3, GET_4, PAIR]).status == "pass"
    assert check("tool-sequence", table, [GET_3, PAIR, GET_4]).status == "fail"


def test_any_order_matches_each_step_to_a_distinct_call_not_greedily() -> None:
    # Step 1 matches either get_wine call; step 2 only the first. A greedy pairing that gives
    # step 1 the first call leaves step 2 nothing; a maximum matching finds the way.
    table = seq(
        "any-order",
        {"name": "get_wine"},
        {"name": "get_wine", "args": {"id": 3}},
        {"name": "search"},
    )
    assert check("tool-sequence", table, [GET_3, PAIR, GET_4, SEARCH_RED]).status == "pass"
    # Two steps cannot share one call.
    one_wine = check("tool-sequence", table, [SEARCH_RED, GET_3])
    assert one_wine.status == "fail"
    assert one_wine.message == (
        '2 of 3 step(s) matched distinct calls; unmatched: step 2 (get_wine{"args": {"id": 3}}); '
        'called, in order: 1. search{"color": "red"}, 2. get_wine{"id": 3}'
    )


def test_the_matching_is_maximum_where_greedy_is_not() -> None:
    # Row 0 could take column 0 or 1, row 1 only column 0.
    assert maximum_matching([[True, True], [True, False]]) == {0: 1, 1: 0}
    assert (
        len(maximum_matching([[True, True, False], [True, False, False], [False, True, True]])) == 3
    )
    assert maximum_matching([[False], [False]]) == {}


def _largest_by_brute_force(matches: list[list[bool]]) -> int:
    rows, cols = len(matches), len(matches[0]) if matches else 0
    for size in range(min(rows, cols), 0, -1):
        for chosen in itertools.combinations(range(rows), size):
            for taken in itertools.permutations(range(cols), size):
                if all(matches[r][c] for r, c in zip(chosen, taken, strict=True)):
                    return size
    return 0


def test_the_matching_is_as_large_as_any_on_random_small_tables() -> None:
    draw = random.Random(40)
    for _ in range(300):
        rows, cols = draw.randint(0, 5), draw.randint(0, 5)
        matches = [[draw.random() < 0.4 for _ in range(cols)] for _ in range(rows)]
        paired = maximum_matching(matches)
        assert len(set(paired.values())) == len(paired)
        assert all(matches[r][c] for r, c in paired.items())
        assert len(paired) == _largest_by_brute_force(matches), matches


def test_a_long_augmenting_path_needs_no_recursion() -> None:
    # Row r < n - 1 matches columns r and r + 1 and takes r; the last row matches only
    # column 0, so every other row must shift along by one: a path longer than Python's
    # recursion limit.
    n = 1500
    chain = [[c in (r, r + 1) for c in range(n)] for r in range(n - 1)]
    chain.append([c == 0 for c in range(n)])
    paired = maximum_matching(chain)
    assert len(paired) == n
    assert paired[n - 1] == 0 and paired[0] == 1


def test_a_failed_call_is_listed_as_an_error_in_the_message() -> None:
    failed = check("tool-sequence", seq("exact", {"name": "pair"}), [call("get_wine", True, id=9)])
    assert failed.message.endswith('called, in order: 1. get_wine{"id": 9} (error)')
    assert failed.actual == [{"name": "get_wine", "args": {"id": 9}, "is_error": True}]


# tool-count


def test_tool_count_counts_one_tools_calls_or_all() -> None:
    calls = [SEARCH_RED, GET_3, GET_4]
    assert check("tool-count", {"name": "get_wine", "min": 2, "max": 2}, calls).status == "pass"
    assert check("tool-count", {"max": 3}, calls).status == "pass"
    too_many = check("tool-count", {"max": 2}, calls)
    assert too_many.status == "fail"
    assert too_many.actual == 3
    assert too_many.message == (
        "tools called 3 time(s), more than max 2; called, in order: "
        '1. search{"color": "red"}, 2. get_wine{"id": 3}, 3. get_wine{"id": 4}'
    )
    too_few = check("tool-count", {"name": "pair", "min": 1}, calls)
    assert too_few.message.startswith("'pair' called 0 time(s), fewer than min 1; called")
    assert check("tool-count", {"name": "pair", "max": 0}, []).status == "pass"


# tool-error


def test_tool_error_fails_on_any_failed_call_naming_it() -> None:
    ok = [SEARCH_RED, GET_3]
    assert check("tool-error", {}, ok).status == "pass"
    broken = [SEARCH_RED, call("get_wine", True, id=9), PAIR]
    failed = check("tool-error", {}, broken)
    assert failed.status == "fail"
    assert failed.message == (
        "1 of 3 call(s) failed: call 2 (get_wine): error: no such wine; called, in order: "
        '1. search{"color": "red"}, 2. get_wine{"id": 9} (error), 3. pair{"dish": "lamb"}'
    )
    # Narrowed to one tool, the others' failures do not count.
    assert check("tool-error", {"name": "search"}, broken).status == "pass"
    # A call the spy refused (invalid arguments) is a failed call too.
    refused = ToolCallRecord(
        turn=1, name="pair", arguments={"dish": 3}, result="error: invalid arguments",
        is_error=True, invalid_arguments=["dish: 3 is not of type 'string'"], duration_ms=1,
    )  # fmt: skip
    assert check("tool-error", {"name": "pair"}, [refused]).status == "fail"


def test_tool_error_expect_error_passes_when_every_call_of_the_tool_failed() -> None:
    table = {"name": "get_wine", "expect": "error"}
    bad = call("get_wine", True, id=9)
    assert check("tool-error", table, [SEARCH_RED, bad, bad]).status == "pass"
    one_ok = check("tool-error", table, [bad, GET_3])
    assert one_ok.status == "fail"
    assert one_ok.message.startswith("1 of 2 call(s) did not fail: call 2 (get_wine); called")
    never = check("tool-error", table, [SEARCH_RED])
    assert never.status == "fail"
    assert (
        never.message == "'get_wine' was never called; "
        'called, in order: 1. search{"color": "red"}'
    )


# max-steps


def test_max_steps_counts_model_turns_final_answer_included() -> None:
    assert check("max-steps", {"max": 3}, [SEARCH_RED], turns=3).status == "pass"
    over = check("max-steps", {"max": 2}, [SEARCH_RED, GET_3], turns=3)
    assert over.status == "fail"
    assert over.actual == 3
    assert over.message == (
        "the model took 3 turn(s), more than max 2; "
        'called, in order: 1. search{"color": "red"}, 2. get_wine{"id": 3}'
    )


# tool-f1


def f1(table: dict[str, Any], calls: list[ToolCallRecord]) -> CheckResult:
    return check("tool-f1", table, calls)


def test_tool_f1_is_graded_precision_recall_and_f1() -> None:
    expected = [
        {"name": "search", "args": {"color": "red"}},
        {"name": "get_wine", "args": {"id": 3}},
    ]
    perfect = f1({"expected": expected}, [GET_3, SEARCH_RED])
    assert perfect.status == "pass"
    assert perfect.actual["f1"] == 1.0
    # 1 of 2 expected matched; 1 of 3 calls expected: P 1/3, R 1/2, F1 0.4.
    partial = f1({"expected": expected, "threshold": 0.5}, [GET_4, SEARCH_RED, PAIR])
    assert partial.status == "fail"
    assert (partial.actual["precision"], partial.actual["recall"], partial.actual["f1"]) == (
        0.3333,
        0.5,
        0.4,
    )
    assert partial.message.startswith(
        "F1 0.4 is below 0.5 (precision 0.3333, recall 0.5: 1 of 2 expected call(s) matched, "
        '2 call(s) unexpected; missing: 2. get_wine{"args": {"id": 3}}); called, in order: '
    )
    assert f1({"expected": expected, "threshold": 0.4}, [GET_4, SEARCH_RED, PAIR]).passed
    nothing = f1({"expected": expected, "threshold": 0}, [])
    assert nothing.status == "pass"  # a threshold of 0 accepts anything
    assert nothing.actual["f1"] == 0.0


def test_tool_f1_matches_each_expected_call_to_at_most_one_call() -> None:
    # Two identical calls meet one expected call: the second is unexpected.
    twice = f1({"expected": [{"name": "get_wine"}], "threshold": 0.5}, [GET_3, GET_4])
    assert (twice.actual["precision"], twice.actual["recall"], twice.actual["matched"]) == (
        0.5,
        1.0,
        1,
    )
    # Maximum matching, as any-order: a greedy pairing would score 2 of 3 here.
    expected = [{"name": "get_wine"}, {"name": "get_wine", "args": {"id": 3}}, {"name": "pair"}]
    assert f1({"expected": expected}, [GET_3, GET_4, PAIR]).actual["f1"] == 1.0


def test_f1_scores() -> None:
    assert f1_scores(0, made=0, wanted=2) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert f1_scores(2, made=4, wanted=2) == {"precision": 0.5, "recall": 1.0, "f1": 0.6667}


# Validation


SEARCH = {"name": "search"}


@pytest.mark.parametrize(
    ("table", "field", "needle"),
    [
        ({"type": "tool-sequence", "steps": []}, "[1].steps", "at least 1"),
        ({"type": "tool-sequence", "steps": [SEARCH], "order": "sorted"}, "[1].order", "exact"),
        (
            {"type": "tool-sequence", "steps": [{**SEARCH, "times": 2}]},
            "[1].steps[1].times",
            "unknown key",
        ),
        (
            {"type": "tool-sequence", "steps": [{"name": "serch"}]},
            "[1].steps[1].name",
            "unknown tool 'serch'",
        ),
        (
            {"type": "tool-sequence", "steps": [{**SEARCH, "args": {"colour": "red"}}]},
            "[1].steps[1].args.colour",
            "'search' has no parameter 'colour'",
        ),
        (
            {"type": "tool-sequence", "steps": [{**SEARCH, "args_match": {"color": "("}}]},
            "[1].steps[1].args_match",
            "invalid regular expression",
        ),
        ({"type": "tool-count"}, "[1]", "give min, max or both"),
        ({"type": "tool-count", "min": 3, "max": 1}, "[1]", "min (3) is above max (1)"),
        ({"type": "tool-count", "max": -1}, "[1].max", "greater than or equal to 0"),
        ({"type": "tool-error", "expect": "fail"}, "[1].expect", "'error'"),
        ({"type": "tool-error", "name": "nope"}, "[1].name", "unknown tool 'nope'"),
        ({"type": "max-steps"}, "[1].max", "required key is missing"),
        ({"type": "max-steps", "max": 0}, "[1].max", "greater than or equal to 1"),
        (
            {"type": "tool-f1", "expected": [SEARCH], "threshold": 1.5},
            "[1].threshold",
            "less than or equal to 1",
        ),
        (
            {"type": "tool-f1", "expected": [{**SEARCH, "agrs": {}}]},
            "[1].expected[1].agrs",
            "unknown key",
        ),
        (
            {"type": "tool-f1", "expected": [{"name": "pear"}]},
            "[1].expected[1].name",
            "unknown tool 'pear'",
        ),
    ],
)
def test_bad_parameters_are_refused_where_written(
    table: dict[str, Any], field: str, needle: str
) -> None:
    _, problems = parse_assertions([table], check_types(), TOOLS, {"search": ["color"]})
    assert any(f == field and needle in m for f, m in problems), problems


def test_the_check_names() -> None:
    def name(table: dict[str, Any]) -> str:
        spec, problems = parse_assertion(table, check_types(), TOOLS)
        assert spec is not None, problems
        return spec.name

    assert (
        name({"type": "tool-sequence", "steps": [{"name": "search"}]}) == "tool-sequence:in-order"
    )
    assert name({"type": "tool-count", "max": 1}) == "tool-count:*"
    assert name({"type": "tool-count", "name": "search", "max": 1, "check_name": "one"}) == "one"
    assert name({"type": "tool-error", "name": "search"}) == "tool-error:search"
    assert name({"type": "max-steps", "max": 2, "name": "brief"}) == "brief"
    assert name({"type": "tool-f1", "expected": [{"name": "pair"}]}) == "tool-f1"


# End to end: `evalctl run` on the scripted provider, with a declared fixture-backed tool.

SUITE = """\
[suite]
name = "cellar"
kind = "assert"
max_turns = 4
tools = ["get_wine"]

[[suite.tool]]
name = "get_wine"
description = "A wine by its id"
parameters = { type = "object", properties = { id = { type = "string" } }, required = ["id"] }
fixture = "fixtures/wines.json"
key = "id"

[[case]]
id = "path"
input = { prompt = "Compare wines w1 and w2." }
[[case.assert]]
type = "tool-sequence"
order = "exact"
steps = [{ name = "get_wine", args = { id = "w1" } }, { name = "get_wine", args = { id = "w2" } }]
[[case.assert]]
type = "tool-sequence"
order = "any-order"
steps = [{ name = "get_wine", args = { id = "w2" } }, { name = "get_wine", args = { id = "w1" } }]
[[case.assert]]
type = "tool-count"
name = "get_wine"
min = 2
max = 2
[[case.assert]]
type = "tool-error"
[[case.assert]]
type = "max-steps"
max = 2
[[case.assert]]
type = "tool-f1"
expected = [
  { name = "get_wine", args = { id = "w1" } },
  { name = "get_wine", args = { id = "w2" } },
]
threshold = 1.0

[[case]]
id = "astray"
input = { prompt = "Compare wines w1 and w2." }
[[case.assert]]
type = "tool-error"
check_name = "no failed call"
[[case.assert]]
type = "tool-error"
name = "get_wine"
expect = "error"
check_name = "every call failed"
[[case.assert]]
type = "max-steps"
max = 2
[[case.assert]]
type = "tool-f1"
expected = [
  { name = "get_wine", args = { id = "w1" } },
  { name = "get_wine", args = { id = "w2" } },
]
threshold = 0.5
"""

REPLIES = """\
[[cases."cellar/path"]]
tool_calls = [
  { name = "get_wine", arguments = { id = "w1" } },
  { name = "get_wine", arguments = { id = "w2" } },
]

[[cases."cellar/path"]]
content = "w1 is red, w2 is white."

[[cases."cellar/astray"]]
tool_calls = [{ name = "get_wine", arguments = { id = "w9" } }]

[[cases."cellar/astray"]]
tool_calls = [{ name = "get_wine", arguments = { id = "w1" } }]

[[cases."cellar/astray"]]
content = "I could not find them all."
"""


def test_the_assertions_run_end_to_end_on_the_scripted_provider(tmp_path: Path) -> None:
    (tmp_path / "fixtures").mkdir()
    wines = {"w1": {"color": "red"}, "w2": {"color": "white"}}
    (tmp_path / "fixtures" / "wines.json").write_text(json.dumps(wines))
    (tmp_path / "cellar.toml").write_text(SUITE)
    (tmp_path / "replies.toml").write_text(REPLIES)
    checked = evalctl(tmp_path, "cases", "validate", "cellar.toml")
    assert checked.returncode == 0, checked.stderr
    ran = evalctl(
        tmp_path, "run", "--provider", "scripted", "--script", "replies.toml",
        "--cases", "cellar.toml", "--out", "out",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    cases = {
        c["key"]: c for c in json.loads((tmp_path / "out" / "results.json").read_text())["cases"]
    }
    path = cases["cellar/path"]
    assert path["status"] == "pass", path["checks"]
    assert [c["name"] for c in path["checks"]] == [
        "tool-sequence:exact",
        "tool-sequence:any-order",
        "tool-count:get_wine",
        "tool-error:*",
        "max-steps",
        "tool-f1",
    ]
    astray = {c["name"]: c for c in cases["cellar/astray"]["checks"]}
    called = 'called, in order: 1. get_wine{"id": "w9"} (error), 2. get_wine{"id": "w1"}'
    assert astray["no failed call"]["status"] == "fail"
    assert astray["no failed call"]["message"].startswith(
        "1 of 2 call(s) failed: call 1 (get_wine): error"
    )
    assert astray["no failed call"]["message"].endswith(called)
    assert astray["every call failed"]["message"] == (
        f"1 of 2 call(s) did not fail: call 2 (get_wine); {called}"
    )
    # Two tool-call turns and the answer's: three turns.
    assert astray["max-steps"]["message"] == f"the model took 3 turn(s), more than max 2; {called}"
    # One of two calls matched one of two expected: P = R = F1 = 0.5, which passes 0.5.
    assert astray["tool-f1"]["status"] == "pass"
    assert astray["tool-f1"]["actual"]["f1"] == 0.5


def test_a_bad_parameter_is_exit_2_naming_the_file_case_and_field(tmp_path: Path) -> None:
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "wines.json").write_text("{}")
    (tmp_path / "cellar.toml").write_text(SUITE.replace('order = "any-order"', 'order = "random"'))
    checked = evalctl(tmp_path, "cases", "validate", "cellar.toml")
    assert checked.returncode == 2
    assert "Traceback" not in checked.stderr
    assert "cellar.toml" in checked.stderr
    assert "case 'path': field 'case.assert[2].order'" in checked.stderr


def test_the_docs_example_validates_and_its_message_is_the_one_written() -> None:
    doc = (REPO / "docs" / "writing-suites.md").read_text()
    section = doc[doc.index("### On the path an agent took") :]
    block = section[section.index("```toml") + len("```toml") : section.index("```\n", 8)]
    tables = tomllib.loads(block)["case"]["assert"]
    tools = ["search_wines", "get_wine"]
    _, problems = parse_assertions(tables, check_types(), tools, {"search_wines": ["color"]})
    assert problems == []
    calls = [
        ToolCallRecord(turn=1, name=n, arguments=a, result="", is_error=e, duration_ms=1)
        for n, a, e in [
            ("search_wines", {"color": "red"}, False),
            ("get_wine", {"id": "w9"}, True),
            ("get_wine", {"id": "w1"}, False),
            ("get_wine", {"id": "w2"}, False),
        ]
    ]
    spec, _ = parse_assertion(
        {"type": "tool-count", "name": "get_wine", "max": 2}, check_types(), None
    )
    assert spec is not None
    result = score_all(KIND, _case([spec]), Transcript([], [], calls))[0]
    written = " ".join(section[section.index("`'get_wine' called") :].split("`")[1].split())
    assert result.message == written


def test_they_judge_the_calls_a_spied_application_made(tmp_path: Path) -> None:
    tools, app = unique("trajtools"), unique("trajapp")
    write(
        tmp_path / f"{tools}.py",
        """
        def lookup(sku):
            if sku.startswith("x"):
                raise KeyError(sku)
            return {"sku": sku}

        def add(sku, qty=1):
            return qty
        """,
    )
    write(
        tmp_path / f"{app}.py",
        f"""
        import {tools} as tools

        def answer(request):
            for sku in request["prompt"].split():
                try:
                    tools.lookup(sku)
                except KeyError:
                    pass
            tools.add("a1", qty=2)
            return "done"
        """,
    )
    suite = write(
        tmp_path / "suite.toml",
        f"""
        [suite]
        name = "shop"
        kind = "assert"
        target = {{ type = "python", function = "{app}:answer" }}
        [[suite.spy]]
        function = "{tools}:lookup"
        [[suite.spy]]
        function = "{tools}:add"

        [[case]]
        id = "basket"
        input = {{ prompt = "a1 x9" }}
        [[case.assert]]
        type = "tool-sequence"
        order = "exact"
        steps = [
          {{ name = "lookup", args = {{ sku = "a1" }} }}, {{ name = "lookup" }}, {{ name = "add" }},
        ]
        [[case.assert]]
        type = "tool-count"
        name = "lookup"
        min = 2
        max = 2
        [[case.assert]]
        type = "tool-error"
        name = "lookup"
        [[case.assert]]
        type = "tool-error"
        name = "add"
        [[case.assert]]
        type = "tool-f1"
        expected = [{{ name = "add", args = {{ sku = "a1" }} }}]
        threshold = 0.6
        """,
    )
    (case,) = run_suite(suite, tmp_path / "out").cases
    checks = {c.name: c for c in case.checks}
    assert {n: c.status for n, c in checks.items()} == {
        "tool-sequence:exact": "pass",
        "tool-count:lookup": "pass",
        "tool-error:lookup": "fail",
        "tool-error:add": "pass",
        "tool-f1": "fail",
    }
    assert checks["tool-error:lookup"].message.startswith(
        "1 of 2 call(s) failed: call 2 (lookup): "
    )
    assert checks["tool-error:lookup"].message.endswith(
        'called, in order: 1. lookup{"sku": "a1"}, 2. lookup{"sku": "x9"} (error), '
        '3. add{"qty": 2, "sku": "a1"}'
    )
    # One of three calls was the expected one: precision 1/3, recall 1, F1 0.5 < 0.6.
    assert checks["tool-f1"].actual["f1"] == 0.5
