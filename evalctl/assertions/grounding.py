"""Grounding: the answer cites what a tool actually returned during this case.

The matching primitive is the one the sommelier's grounding check uses
(evalctl.scoring.grounding): whole normalised words, not substrings. It is kept apart from
the assertion so how strictly an answer must quote a value can get smarter without touching
the assertion around it.
"""

from __future__ import annotations

from typing import Any

from evalctl.assertions.base import Assertion, Evidence, Outcome, returned_value, value_at
from evalctl.scoring.grounding import mentions_value


def cites(answer: str, value: Any) -> bool:
    """Whether `answer` cites `value`, a value a tool returned: the shared grounding
    primitive (evalctl.scoring.grounding.mentions_value). A string counts by its whole
    normalised words, in any order and close together, never as a substring ("Paris" is not
    cited by "Parisian"); a number as a whole number (21 is not in 210, 21.0 may be written
    21); an object or list by every scalar inside it."""
    return mentions_value(answer, value)


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
        every_call = evidence.calls_to(self.tool)
        calls = [c for c in every_call if not c.is_error]
        expected = f"the answer cites {self.tool}" + (f" {self.path}" if self.path else "")
        if not calls:
            # Say which: never called, or called and every call failed (what to fix differs).
            why = (
                f"{self.tool!r} was not called in this case"
                if not every_call
                else f"every call to {self.tool!r} returned an error ({len(every_call)}), "
                "so it returned no value to cite"
            )
            return Outcome(False, expected, None, why)
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
