"""Assertions on what a tool returned: `tool-result`. It judges the value a call of a tool
(a declared tool, a plugin's, or a spied function of your application) returned in this
case: how many items a list at a path holds, what the value equals or contains.

Here `name` is the tool's name; the check's own name is set with `check_name`.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field, model_validator

from evalctl.assertions.base import Params, json_equal, outcome, returned_value, value_at
from evalctl.results.models import CheckResult, ToolCallRecord
from evalctl.scoring.check import Check, ScoringContext

# How much of a returned value a failure message quotes, per call.
_SHOWN = 160


class ToolResultParams(Params):
    name: str
    # A dotted path into the returned JSON (`wines`, `wines.0.name`); "" is the value itself.
    path: str = ""
    # The value at `path` is a list of at least this many items.
    min_items: int | None = Field(default=None, ge=0)
    # The value at `path` equals this (compared as JSON).
    equals: Any = None
    # The value at `path` holds this: a list an equal item, a string this text.
    contains: Any = None

    @model_validator(mode="after")
    def _contains_is_testable(self) -> ToolResultParams:
        if "contains" in self.model_fields_set and self.contains is None:
            raise ValueError("contains: give a value to look for")
        return self

    def expected(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.path:
            out["path"] = self.path
        for key in ("min_items", "equals", "contains"):
            if key in self.model_fields_set:
                out[key] = getattr(self, key)
        return out


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _holds(container: Any, item: Any) -> bool:
    if isinstance(container, list):
        return any(json_equal(element, item) for element in container)
    if isinstance(container, str) and isinstance(item, str):
        return item in container
    return False


def misses(call: ToolCallRecord, params: ToolResultParams) -> tuple[str | None, str]:
    """Why `call` does not satisfy `params` (None when it does), and what it returned at
    the path, for the message."""
    if call.is_error:
        return f"returned an error ({call.result[:_SHOWN]})", call.result[:_SHOWN]
    found, value = value_at(returned_value(call), params.path)
    where = f" at {params.path!r}" if params.path else ""
    if not found:
        return f"has no value{where}", _shown(returned_value(call))
    shown = _shown(value)
    if params.min_items is not None:
        if not isinstance(value, list):
            return f"returned {shown}{where}, not a list", shown
        if len(value) < params.min_items:
            return f"returned {len(value)} item(s){where}, fewer than {params.min_items}", shown
    if "equals" in params.model_fields_set and not json_equal(value, params.equals):
        return f"returned {shown}{where}, not {_shown(params.equals)}", shown
    if "contains" in params.model_fields_set and not _holds(value, params.contains):
        return f"returned {shown}{where}, which does not hold {_shown(params.contains)}", shown
    return None, shown


class ToolResult(Check[ToolResultParams]):
    """Some call of tool `name` in this case returned, at `path`, a list of at least
    `min_items` items / a value equal to `equals` / a value holding `contains`; without a
    test, a value at `path` at all."""

    type_name = "tool-result"
    params_model = ToolResultParams

    def default_name(self, params: ToolResultParams) -> str:
        return f"tool-result:{params.name}" + (f".{params.path}" if params.path else "")

    def tools_named(self, params: ToolResultParams) -> list[tuple[str, str]]:
        return [("name", params.name)]

    def evaluate(self, params: ToolResultParams, ctx: ScoringContext) -> CheckResult:
        calls = [c for c in ctx.transcript.tool_calls if c.name == params.name]
        expected = params.expected()
        if not calls:
            why = f"{params.name!r} was not called in this case"
            return outcome(self.type_name, False, expected, [], why)
        verdicts = [misses(call, params) for call in calls]
        actual = [shown for _, shown in verdicts]
        passed = any(why is None for why, _ in verdicts)
        listed = "; ".join(
            f"call {n} {why or 'passed'}" for n, (why, _) in enumerate(verdicts, start=1)
        )
        reason = f"{params.name!r} was called {len(calls)} time(s), none satisfying: {listed}"
        return outcome(self.type_name, passed, expected, actual, reason)


CHECKS = (ToolResult(),)
