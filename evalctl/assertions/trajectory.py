"""Assertions on the path an agent took: tool-sequence, tool-count, tool-error, max-steps and
tool-f1. They judge every call the spy recorded in the case, whatever the tool: a declared
one, an MCP server's, a spied function of your application, or one a target reported.

A step of `tool-sequence` and an expected call of `tool-f1` match a call as `tool-called`
does (evalctl.assertions.tool_use.mismatches). Where a step may match one of several calls,
the steps are paired with distinct calls by a maximum bipartite matching, never greedily:
a greedy pairing can spend the one call a later step needed. Every failure says what was
called, in order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from evalctl.assertions import pattern as patterns
from evalctl.assertions.base import Params, outcome
from evalctl.assertions.tool_use import CallParams, mismatches
from evalctl.results.models import CheckResult, ToolCallRecord
from evalctl.scoring.check import Check, ScoringContext

# How much of one call's arguments (and of a failed call's result) a message quotes.
_SHOWN = 120
# How many calls a message lists; a longer run of calls is cut, saying how many more.
_LISTED = 30


def _cut(text: str, limit: int = _SHOWN) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _call_text(call: ToolCallRecord) -> str:
    args = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True, default=str)
    return f"{call.name}{_cut(args)}" + (" (error)" if call.is_error else "")


def called(calls: Sequence[ToolCallRecord]) -> str:
    """What was called, in order, for a message: `called, in order: 1. search{...}, ...`."""
    if not calls:
        return "no tool was called"
    listed = ", ".join(f"{n}. {_call_text(c)}" for n, c in enumerate(calls[:_LISTED], start=1))
    more = f", and {len(calls) - _LISTED} more" if len(calls) > _LISTED else ""
    return f"called, in order: {listed}{more}"


def _calls_actual(calls: Sequence[ToolCallRecord]) -> list[dict[str, Any]]:
    return [
        {"name": c.name, "args": c.arguments, **({"is_error": True} if c.is_error else {})}
        for c in calls
    ]


def _step_text(step: CallParams) -> str:
    tests = {k: v for k, v in step.expected().items() if k != "name"}
    shown = _cut(json.dumps(tests, ensure_ascii=False, sort_keys=True)) if tests else ""
    return step.name + shown


def _matches(steps: Sequence[CallParams], calls: Sequence[ToolCallRecord]) -> list[list[bool]]:
    """matches[i][j]: call j matches step i. PatternTimeoutError from an `args_match`."""
    return [[c.name == s.name and not mismatches(c, s) for c in calls] for s in steps]


def maximum_matching(matches: Sequence[Sequence[bool]]) -> dict[int, int]:
    """A maximum matching of rows to distinct columns where `matches[row][col]`, as
    {row: col}: Kuhn's augmenting paths, searched with an explicit stack so that a long list
    of steps cannot run into Python's recursion limit."""
    adjacent = [[col for col, ok in enumerate(cols) if ok] for cols in matches]
    col_of: dict[int, int] = {}
    row_of: dict[int, int] = {}
    for start in range(len(adjacent)):
        # The row each column was reached from, on this search: the path back to `start`.
        reached_from: dict[int, int] = {}
        stack: list[tuple[int, Iterator[int]]] = []
        free: tuple[int, int] | None = None
        entering: int | None = start
        while free is None:
            if entering is not None:
                # A free column of the row entered ends the search at once: without this
                # look-ahead, many calls that all match took cubic time (3,000: minutes).
                col = next((c for c in adjacent[entering] if c not in row_of), None)
                if col is not None:
                    reached_from[col], free = entering, (entering, col)
                    break
                stack.append((entering, iter(adjacent[entering])))
                entering = None
            if not stack:
                break
            row, cols = stack[-1]
            col = next((c for c in cols if c not in reached_from), None)
            if col is None:
                stack.pop()
                continue
            reached_from[col] = row
            entering = row_of[col]
        if free is None:
            continue
        # Flip the path: each row on it takes the column it reached, its old one passing
        # back to the row before it, until `start` (unmatched until now) has one.
        row, col = free
        while True:
            old = col_of.get(row)
            col_of[row], row_of[col] = col, row
            if old is None:
                break
            row, col = reached_from[old], old
    return col_of


def _error(type_name: str, expected: Any, actual: Any, exc: Exception) -> CheckResult:
    # No verdict was reached: an `args_match` pattern ran out of time, not the model's fault.
    return CheckResult(
        name=type_name, status="error", expected=expected, actual=actual, message=str(exc)
    )


class ToolSequenceParams(Params):
    steps: list[CallParams] = Field(min_length=1)
    order: Literal["exact", "in-order", "any-order"] = "in-order"

    def expected(self) -> dict[str, Any]:
        return {"order": self.order, "steps": [s.expected() for s in self.steps]}


class ToolSequence(Check[ToolSequenceParams]):
    """The calls follow `steps` (each matched as tool-called matches a call): `exact`, these
    calls and no other, in this order; `in-order`, in this order with other calls between;
    `any-order`, each step a distinct call, other calls allowed."""

    type_name = "tool-sequence"
    params_model = ToolSequenceParams

    def default_name(self, params: ToolSequenceParams) -> str:
        return f"tool-sequence:{params.order}"

    def tools_named(self, params: ToolSequenceParams) -> list[tuple[str, str]]:
        return [(f"steps[{n}].name", s.name) for n, s in enumerate(params.steps, start=1)]

    def arguments_named(self, params: ToolSequenceParams) -> list[tuple[str, str, str]]:
        return [
            triple
            for n, s in enumerate(params.steps, start=1)
            for triple in s.arguments_named(f"steps[{n}].")
        ]

    def evaluate(self, params: ToolSequenceParams, ctx: ScoringContext) -> CheckResult:
        calls = ctx.transcript.tool_calls
        expected, actual = params.expected(), _calls_actual(calls)
        try:
            why = {
                "exact": _exact_miss,
                "in-order": _in_order_miss,
                "any-order": _any_order_miss,
            }[params.order](params.steps, calls)
        except patterns.PatternTimeoutError as exc:
            return _error(self.type_name, expected, actual, exc)
        return outcome(self.type_name, why is None, expected, actual, f"{why}; {called(calls)}")


def _exact_miss(steps: Sequence[CallParams], calls: Sequence[ToolCallRecord]) -> str | None:
    for n, (step, call) in enumerate(zip(steps, calls, strict=False), start=1):
        if call.name != step.name:
            return f"call {n} is {call.name!r}, step {n} expects {_step_text(step)}"
        why = mismatches(call, step)
        if why:
            return f"call {n} ({call.name!r}) does not match step {n}: {', '.join(why)}"
    if len(calls) != len(steps):
        return f"{len(steps)} step(s) expected exactly, {len(calls)} call(s) made"
    return None


def _in_order_miss(steps: Sequence[CallParams], calls: Sequence[ToolCallRecord]) -> str | None:
    # Each step takes the earliest matching call after the previous step's: taking any later
    # one could only leave fewer calls for the steps after it.
    at = 0
    for n, step in enumerate(steps, start=1):
        found = next(
            (j for j in range(at, len(calls)) if calls[j].name == step.name
             and not mismatches(calls[j], step)),
            None,
        )  # fmt: skip
        if found is None:
            after = f" after call {at}" if at else ""
            return f"step {n} ({_step_text(step)}) matched no call{after}"
        at = found + 1
    return None


def _any_order_miss(steps: Sequence[CallParams], calls: Sequence[ToolCallRecord]) -> str | None:
    paired = maximum_matching(_matches(steps, calls))
    if len(paired) == len(steps):
        return None
    missing = [f"step {n} ({_step_text(s)})" for n, s in enumerate(steps, 1) if n - 1 not in paired]
    return (
        f"{len(paired)} of {len(steps)} step(s) matched distinct calls; "
        f"unmatched: {', '.join(missing)}"
    )


class ToolCountParams(Params):
    name: str | None = None
    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _bounded(self) -> ToolCountParams:
        if self.min is None and self.max is None:
            raise ValueError("give min, max or both")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is above max ({self.max})")
        return self

    def expected(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class ToolCount(Check[ToolCountParams]):
    """Tool `name` (without `name`, any tool) was called at least `min` and at most `max`
    times; failed calls count."""

    type_name = "tool-count"
    params_model = ToolCountParams

    def default_name(self, params: ToolCountParams) -> str:
        return f"tool-count:{params.name or '*'}"

    def tools_named(self, params: ToolCountParams) -> list[tuple[str, str]]:
        return [("name", params.name)] if params.name else []

    def evaluate(self, params: ToolCountParams, ctx: ScoringContext) -> CheckResult:
        every = ctx.transcript.tool_calls
        count = len([c for c in every if c.name == params.name] if params.name else every)
        what = repr(params.name) if params.name else "tools"
        why = ""
        if params.min is not None and count < params.min:
            why = f"{what} called {count} time(s), fewer than min {params.min}"
        elif params.max is not None and count > params.max:
            why = f"{what} called {count} time(s), more than max {params.max}"
        return outcome(self.type_name, not why, params.expected(), count, f"{why}; {called(every)}")


class ToolErrorParams(Params):
    name: str | None = None
    # "error": the tool was called and every one of its calls failed (a test of error paths).
    expect: Literal["error"] | None = None

    def expected(self) -> dict[str, Any]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class ToolError(Check[ToolErrorParams]):
    """No call of tool `name` (without `name`, of any tool) failed: a tool error result
    (MCP `isError`), a protocol error, a timeout, or a call the spy refused (an unknown tool,
    invalid arguments). With `expect = "error"`: it was called, and every call failed."""

    type_name = "tool-error"
    params_model = ToolErrorParams

    def default_name(self, params: ToolErrorParams) -> str:
        return f"tool-error:{params.name or '*'}"

    def tools_named(self, params: ToolErrorParams) -> list[tuple[str, str]]:
        return [("name", params.name)] if params.name else []

    def evaluate(self, params: ToolErrorParams, ctx: ScoringContext) -> CheckResult:
        every = ctx.transcript.tool_calls
        numbered = [(n, c) for n, c in enumerate(every, start=1) if params.name in (None, c.name)]
        failed = [(n, c) for n, c in numbered if c.is_error]
        actual = [{"call": n, "name": c.name, "result": _cut(c.result)} for n, c in failed]
        what = repr(params.name) if params.name else "a tool"
        if params.expect == "error":
            if not numbered:
                why = f"{what} was never called"
            else:
                ok = [f"call {n} ({c.name})" for n, c in numbered if not c.is_error]
                why = f"{len(ok)} of {len(numbered)} call(s) did not fail: {', '.join(ok)}"
            passed = bool(numbered) and len(failed) == len(numbered)
        else:
            listed = "; ".join(f"call {n} ({c.name}): {_cut(c.result)}" for n, c in failed)
            why = f"{len(failed)} of {len(numbered)} call(s) failed: {listed}"
            passed = not failed
        expected = params.expected() or "no failed call"
        return outcome(self.type_name, passed, expected, actual, f"{why}; {called(every)}")


class MaxStepsParams(Params):
    max: int = Field(ge=1)


class MaxSteps(Check[MaxStepsParams]):
    """The model took at most `max` turns, the final answer's turn included."""

    type_name = "max-steps"
    params_model = MaxStepsParams

    def evaluate(self, params: MaxStepsParams, ctx: ScoringContext) -> CheckResult:
        turns = len(ctx.transcript.responses)
        why = f"the model took {turns} turn(s), more than max {params.max}"
        return outcome(
            self.type_name, turns <= params.max, {"max": params.max}, turns,
            f"{why}; {called(ctx.transcript.tool_calls)}",
        )  # fmt: skip


class ToolF1Params(Params):
    expected: list[CallParams] = Field(min_length=1)
    threshold: float = Field(default=1.0, ge=0.0, le=1.0)


class ToolF1(Check[ToolF1Params]):
    """The calls made, scored against the `expected` calls (each matched as tool-called
    matches a call, and by at most one call: a maximum matching): precision, recall and F1;
    it passes when F1 >= `threshold`."""

    type_name = "tool-f1"
    params_model = ToolF1Params

    def tools_named(self, params: ToolF1Params) -> list[tuple[str, str]]:
        return [(f"expected[{n}].name", c.name) for n, c in enumerate(params.expected, start=1)]

    def arguments_named(self, params: ToolF1Params) -> list[tuple[str, str, str]]:
        return [
            triple
            for n, c in enumerate(params.expected, start=1)
            for triple in c.arguments_named(f"expected[{n}].")
        ]

    def evaluate(self, params: ToolF1Params, ctx: ScoringContext) -> CheckResult:
        calls = ctx.transcript.tool_calls
        expected: dict[str, Any] = {
            "expected": [c.expected() for c in params.expected],
            "threshold": params.threshold,
        }
        try:
            paired = maximum_matching(_matches(params.expected, calls))
        except patterns.PatternTimeoutError as exc:
            return _error(self.type_name, expected, _calls_actual(calls), exc)
        scores = f1_scores(len(paired), made=len(calls), wanted=len(params.expected))
        missing = [
            f"{n}. {_step_text(c)}" for n, c in enumerate(params.expected, 1) if n - 1 not in paired
        ]
        extra = len(calls) - len(paired)
        actual = {**scores, "matched": len(paired), "calls": _calls_actual(calls)}
        why = (
            f"F1 {scores['f1']} is below {params.threshold} (precision {scores['precision']}, "
            f"recall {scores['recall']}: {len(paired)} of {len(params.expected)} expected "
            f"call(s) matched, {extra} call(s) unexpected"
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + f"); {called(calls)}"
        )
        return outcome(self.type_name, scores["f1"] >= params.threshold, expected, actual, why)


def f1_scores(matched: int, *, made: int, wanted: int) -> dict[str, float]:
    """Precision (matched of the calls made; 0 when none was made), recall (matched of the
    calls wanted) and their harmonic mean, rounded to 4 places."""
    precision = matched / made if made else 0.0
    recall = matched / wanted if wanted else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)}


CHECKS = (ToolSequence(), ToolCount(), ToolError(), MaxSteps(), ToolF1())
