"""Assertions on tool use: tool-called, tool-not-called, tool-args-valid. They judge the
calls the spy recorded, as the model made them (failed calls count: the model did call;
refused ones too, their arguments invalid).

Here `name` is the tool's name; the check's own name is set with `check_name`.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from evalctl.assertions.base import Params, json_equal, outcome
from evalctl.results.models import CheckResult, ToolCallRecord
from evalctl.scoring.check import ScoringContext


def _matches(call: ToolCallRecord, subset: dict[str, Any]) -> bool:
    return all(k in call.arguments and json_equal(call.arguments[k], v) for k, v in subset.items())


class ToolCalledParams(Params):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    times: int | None = Field(default=None, ge=0)


class ToolNotCalledParams(Params):
    name: str | None = None


class ToolCalled:
    """Tool `name` was called, with arguments including `args` (values compared exactly);
    with `times`, exactly that many matching calls."""

    type_name = "tool-called"
    params_model = ToolCalledParams

    def default_name(self, params: ToolCalledParams) -> str:
        return f"tool-called:{params.name}"

    def tools_named(self, params: ToolCalledParams) -> list[tuple[str, str]]:
        return [("name", params.name)]

    def arguments_named(self, params: ToolCalledParams) -> list[tuple[str, str, str]]:
        return [(f"args.{arg}", params.name, arg) for arg in params.args]

    def evaluate(self, params: ToolCalledParams, ctx: ScoringContext) -> CheckResult:
        calls = [c for c in ctx.transcript.tool_calls if c.name == params.name]
        matching = [c for c in calls if _matches(c, params.args)]
        # Keyed like the assertion itself (`name`, `args`, `times`), so a failure reads back
        # as the table that was written.
        expected: dict[str, Any] = {"name": params.name}
        if params.args:
            expected["args"] = params.args
        if params.times is not None:
            expected["times"] = params.times
        actual = [c.arguments for c in calls]
        if params.times is not None:
            passed = len(matching) == params.times
            why = f"{len(matching)} matching call(s), expected {params.times}"
        elif not calls:
            passed, why = False, f"{params.name!r} was never called"
        else:
            passed = bool(matching)
            why = f"{params.name!r} was called {len(calls)} time(s), never with {params.args!r}"
        return outcome(self.type_name, passed, expected, actual, why)


class ToolNotCalled:
    """Tool `name` was not called; without `name`, no tool at all was called."""

    type_name = "tool-not-called"
    params_model = ToolNotCalledParams

    def default_name(self, params: ToolNotCalledParams) -> str:
        return f"tool-not-called:{params.name or '*'}"

    def tools_named(self, params: ToolNotCalledParams) -> list[tuple[str, str]]:
        return [("name", params.name)] if params.name else []

    def evaluate(self, params: ToolNotCalledParams, ctx: ScoringContext) -> CheckResult:
        every = ctx.transcript.tool_calls
        calls = [c for c in every if c.name == params.name] if params.name else every
        actual = [{"name": c.name, "args": c.arguments} for c in calls]
        what = repr(params.name) if params.name else "a tool"
        expected = f"no call to {params.name or 'any tool'}"
        why = f"{what} was called {len(calls)} time(s)"
        return outcome(self.type_name, not calls, expected, actual, why)


class ToolArgsValid:
    """Every call to tool `name` (without `name`, to any tool) had arguments its `parameters`
    schema accepts; a case with no such call passes."""

    type_name = "tool-args-valid"
    params_model = ToolNotCalledParams

    def default_name(self, params: ToolNotCalledParams) -> str:
        return f"tool-args-valid:{params.name or '*'}"

    def tools_named(self, params: ToolNotCalledParams) -> list[tuple[str, str]]:
        return [("name", params.name)] if params.name else []

    def evaluate(self, params: ToolNotCalledParams, ctx: ScoringContext) -> CheckResult:
        every = ctx.transcript.tool_calls
        calls = [c for c in every if c.name == params.name] if params.name else every
        invalid = [
            {"name": c.name, "args": c.arguments, "invalid": c.invalid_arguments}
            for c in calls
            if c.invalid_arguments
        ]
        why = f"{len(invalid)} of {len(calls)} call(s) had invalid arguments: " + "; ".join(
            f"{c['name']}: {', '.join(c['invalid'])}" for c in invalid
        )
        return outcome(self.type_name, not invalid, "valid arguments", invalid, why)


CHECKS = (ToolCalled(), ToolNotCalled(), ToolArgsValid())
