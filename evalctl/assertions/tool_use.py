"""Assertions on tool use: tool-called, tool-not-called. They judge the calls the spy
recorded, as the model made them (failed calls count: the model did call).

Here `name` is the tool's name; the check's own name is set with `check_name`.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from evalctl.assertions.base import Assertion, Evidence, Outcome, json_equal
from evalctl.results.models import ToolCallRecord


def _matches(call: ToolCallRecord, subset: dict[str, Any]) -> bool:
    return all(k in call.arguments and json_equal(call.arguments[k], v) for k, v in subset.items())


class ToolCalled(Assertion):
    """Tool `name` was called, with arguments including `args` (values compared exactly);
    with `times`, exactly that many matching calls."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    times: int | None = Field(default=None, ge=0)

    def default_name(self) -> str:
        return f"tool-called:{self.name}"

    def tools_named(self) -> list[tuple[str, str]]:
        return [("name", self.name)]

    def arguments_named(self) -> list[tuple[str, str, str]]:
        return [(f"args.{arg}", self.name, arg) for arg in self.args]

    def evaluate(self, evidence: Evidence) -> Outcome:
        calls = evidence.calls_to(self.name)
        matching = [c for c in calls if _matches(c, self.args)]
        # Keyed like the assertion itself (`name`, `args`, `times`), so a failure reads back
        # as the table that was written.
        expected: dict[str, Any] = {"name": self.name}
        if self.args:
            expected["args"] = self.args
        if self.times is not None:
            expected["times"] = self.times
        actual = [c.arguments for c in calls]
        if self.times is not None:
            passed = len(matching) == self.times
            reason = f"{len(matching)} matching call(s), expected {self.times}"
        elif not calls:
            passed, reason = False, f"{self.name!r} was never called"
        else:
            passed = bool(matching)
            reason = f"{self.name!r} was called {len(calls)} time(s), never with {self.args!r}"
        return Outcome(passed, expected, actual, "" if passed else reason)


class ToolNotCalled(Assertion):
    """Tool `name` was not called; without `name`, no tool at all was called."""

    name: str | None = None

    def default_name(self) -> str:
        return f"tool-not-called:{self.name or '*'}"

    def tools_named(self) -> list[tuple[str, str]]:
        return [("name", self.name)] if self.name else []

    def evaluate(self, evidence: Evidence) -> Outcome:
        calls = evidence.calls_to(self.name) if self.name else evidence.tool_calls
        actual = [{"name": c.name, "args": c.arguments} for c in calls]
        what = repr(self.name) if self.name else "a tool"
        reason = f"{what} was called {len(calls)} time(s)" if calls else ""
        return Outcome(not calls, f"no call to {self.name or 'any tool'}", actual, reason)


ASSERTIONS: dict[str, type[Assertion]] = {
    "tool-called": ToolCalled,
    "tool-not-called": ToolNotCalled,
}
