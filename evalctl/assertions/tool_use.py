"""Assertions on tool use: tool-called, tool-not-called, tool-args-valid. They judge the
calls the spy recorded, as the model made them (failed calls count: the model did call;
refused ones too, their arguments invalid).

Here `name` is the tool's name; the check's own name is set with `check_name`.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from evalctl.assertions import pattern as patterns
from evalctl.assertions.base import Params, json_equal, outcome
from evalctl.json_schema import schema_problem, validation_errors
from evalctl.results.models import CheckResult, ToolCallRecord
from evalctl.scoring.check import Check, ScoringContext


class CallParams(Params):
    """One call as `tool-called` matches it: the tool's `name` and tests of its arguments
    (also a step of `tool-sequence` and an expected call of `tool-f1`)."""

    name: str
    # Per argument: its exact value (compared as JSON), a regex its string value matches, or a
    # JSON Schema its value satisfies. A call matches when it meets every one of them.
    args: dict[str, Any] = Field(default_factory=dict)
    args_match: dict[str, str] = Field(default_factory=dict)
    args_schema: dict[str, dict[str, Any]] = Field(default_factory=dict)

    @field_validator("args_match")
    @classmethod
    def _patterns_compile(cls, patterns_by_arg: dict[str, str]) -> dict[str, str]:
        for arg, pattern in patterns_by_arg.items():
            problem = patterns.compile_problem(pattern)
            if problem:
                raise ValueError(f"{arg}: {problem}")
        return patterns_by_arg

    @field_validator("args_schema")
    @classmethod
    def _schemas_valid(cls, schemas: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        for arg, schema in schemas.items():
            problem = schema_problem(schema)
            if problem:
                raise ValueError(f"{arg}: {problem}")
        return schemas

    def argument_names(self) -> list[str]:
        """Every argument the assertion expects, once, in the order written."""
        return list(dict.fromkeys([*self.args, *self.args_match, *self.args_schema]))

    def expected(self) -> dict[str, Any]:
        # Keyed like the assertion itself, so a failure reads back as the table written.
        out: dict[str, Any] = {"name": self.name}
        for key in ("args", "args_match", "args_schema"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out

    def arguments_named(self, key: str) -> list[tuple[str, str, str]]:
        """(key, tool, argument) triples for the loader, `key` the field this call sits in
        ("" at the top of the assertion)."""
        return [
            (f"{key}{part}.{arg}", self.name, arg)
            for part in ("args", "args_match", "args_schema")
            for arg in getattr(self, part)
        ]


class ToolCalledParams(CallParams):
    times: int | None = Field(default=None, ge=0)

    def expected(self) -> dict[str, Any]:
        out = super().expected()
        if self.times is not None:
            out["times"] = self.times
        return out


def mismatches(call: ToolCallRecord, params: CallParams) -> list[str]:
    """Why `call` does not match, one line per argument that fails; empty when it matches.
    PatternTimeoutError when an `args_match` pattern runs past its time limit."""
    found = call.arguments
    why: list[str] = []
    for arg in params.argument_names():
        if arg not in found:
            why.append(f"{arg}: missing")
            continue
        value = found[arg]
        if arg in params.args and not json_equal(value, params.args[arg]):
            why.append(f"{arg}: expected {params.args[arg]!r}, got {value!r}")
        if arg in params.args_match:
            pattern = params.args_match[arg]
            if not isinstance(value, str):
                why.append(f"{arg}: expected a string to match /{pattern}/, got {value!r}")
            elif not patterns.search(pattern, value):
                why.append(f"{arg}: /{pattern}/ does not match {value!r}")
        if arg in params.args_schema:
            broken = validation_errors(params.args_schema[arg], value, limit=1)
            if broken:
                # The error's path is relative to the argument; "(root)" is the argument itself.
                where, _, message = broken[0].partition(": ")
                inside = "" if where == "(root)" else f".{where}"
                why.append(f"{arg}{inside}: {message} (args_schema)")
    return why


class ToolNotCalledParams(Params):
    name: str | None = None


class ToolCalled(Check[ToolCalledParams]):
    """Tool `name` was called with arguments meeting `args` (exact values), `args_match`
    (regexes) and `args_schema` (JSON Schemas), each per key; with `times`, exactly that many
    matching calls."""

    type_name = "tool-called"
    params_model = ToolCalledParams

    def default_name(self, params: ToolCalledParams) -> str:
        return f"tool-called:{params.name}"

    def tools_named(self, params: ToolCalledParams) -> list[tuple[str, str]]:
        return [("name", params.name)]

    def arguments_named(self, params: ToolCalledParams) -> list[tuple[str, str, str]]:
        return params.arguments_named("")

    def evaluate(self, params: ToolCalledParams, ctx: ScoringContext) -> CheckResult:
        calls = [c for c in ctx.transcript.tool_calls if c.name == params.name]
        expected, actual = params.expected(), [c.arguments for c in calls]
        try:
            reasons = [mismatches(c, params) for c in calls]
        except patterns.PatternTimeoutError as exc:
            # No verdict was reached: the pattern is at fault, not the model.
            return CheckResult(
                name=self.type_name, status="error", expected=expected, actual=actual,
                message=str(exc),
            )  # fmt: skip
        matching = sum(1 for r in reasons if not r)
        # Each call that missed, and on which argument: what to fix is in the message.
        missed = "; ".join(f"call {n}: {', '.join(r)}" for n, r in enumerate(reasons, 1) if r)
        if params.times is not None:
            passed = matching == params.times
            why = f"{matching} matching call(s), expected {params.times}"
            if matching < params.times and missed:
                why += f" ({missed})"
        elif not calls:
            passed, why = False, f"{params.name!r} was never called"
        else:
            passed = matching > 0
            why = f"{params.name!r} was called {len(calls)} time(s), none matching: {missed}"
        return outcome(self.type_name, passed, expected, actual, why)


class ToolNotCalled(Check[ToolNotCalledParams]):
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


class ToolArgsValid(Check[ToolNotCalledParams]):
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
