"""Grounding: the answer cites what a tool actually returned during this case.

The matching primitive, `cites`, is kept apart on purpose: how strictly an answer must
quote a value (number formats, units, paraphrase) is expected to get stricter and smarter
without touching the assertion around it.
"""

from __future__ import annotations

from typing import Any

from evalctl.assertions.base import Assertion, Evidence, Outcome, returned_value, value_at


def _scalar_forms(value: Any) -> list[str]:
    """The spellings of a scalar an answer may use: 21.0 may be written 21."""
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, float) and value.is_integer():
        return [str(int(value)), repr(value)]
    return [str(value)]


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [] if value is None else [value]


def cites(answer: str, value: Any) -> bool:
    """Whether `answer` contains `value`: a scalar by one of its spellings (ignoring case),
    an object or list by every scalar inside it."""
    leaves = _leaves(value)
    if not leaves:
        return False
    folded = answer.casefold()
    return all(
        any(form.strip().casefold() in folded for form in _scalar_forms(leaf) if form.strip())
        for leaf in leaves
    )


class CitesToolResult(Assertion):
    """The answer contains the value at `path` of what tool `tool` returned in this case
    (any of its successful calls); without `path`, the whole returned value."""

    tool: str
    path: str = ""

    def default_name(self) -> str:
        return f"cites-tool-result:{self.tool}" + (f".{self.path}" if self.path else "")

    def tools_named(self) -> list[tuple[str, str]]:
        return [("tool", self.tool)]

    def evaluate(self, evidence: Evidence) -> Outcome:
        calls = [c for c in evidence.calls_to(self.tool) if not c.is_error]
        expected = f"the answer cites {self.tool}" + (f" {self.path}" if self.path else "")
        if not calls:
            return Outcome(False, expected, None, f"{self.tool!r} returned nothing in this case")
        values = []
        for call in calls:
            found, value = value_at(returned_value(call), self.path)
            if found:
                values.append(value)
        if not values:
            return Outcome(False, expected, None, f"no returned value has path {self.path!r}")
        if any(cites(evidence.answer, v) for v in values):
            return Outcome(True, values[0] if len(values) == 1 else values, evidence.answer)
        shown = values[0] if len(values) == 1 else values
        return Outcome(
            False, shown, evidence.answer, f"the answer does not cite {shown!r} from {self.tool!r}"
        )


ASSERTIONS: dict[str, type[Assertion]] = {"cites-tool-result": CitesToolResult}
