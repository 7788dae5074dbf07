"""Grounding: the answer cites what a tool actually returned during this case.

The matching primitive is the one the sommelier's grounding check uses
(evalctl.scoring.grounding): whole normalised words, not substrings. It is kept apart from
the assertion so how strictly an answer must quote a value can get smarter without touching
the assertion around it.
"""

from __future__ import annotations

from typing import Any

from evalctl.assertions.base import Params, outcome, returned_value, value_at
from evalctl.results.models import CheckResult
from evalctl.scoring.check import Check, ScoringContext
from evalctl.scoring.grounding import mentions_value


def cites(answer: str, value: Any) -> bool:
    """Whether `answer` cites `value`, a value a tool returned: the shared grounding
    primitive (evalctl.scoring.grounding.mentions_value). A string counts by its whole
    normalised words, in any order and close together, never as a substring ("Paris" is not
    cited by "Parisian"); a number as a whole number (21 is not in 210, 21.0 may be written
    21); an object or list by every scalar inside it."""
    return mentions_value(answer, value)


class CitesToolResultParams(Params):
    tool: str
    path: str = ""


class CitesToolResult(Check[CitesToolResultParams]):
    """The answer contains the value at `path` of what tool `tool` returned in this case
    (any of its successful calls); without `path`, the whole returned value."""

    type_name = "cites-tool-result"
    params_model = CitesToolResultParams

    def default_name(self, params: CitesToolResultParams) -> str:
        return f"cites-tool-result:{params.tool}" + (f".{params.path}" if params.path else "")

    def tools_named(self, params: CitesToolResultParams) -> list[tuple[str, str]]:
        return [("tool", params.tool)]

    def evaluate(self, params: CitesToolResultParams, ctx: ScoringContext) -> CheckResult:
        tool, path, answer = params.tool, params.path, ctx.answer.text
        every_call = [c for c in ctx.transcript.tool_calls if c.name == tool]
        calls = [c for c in every_call if not c.is_error]
        expected = f"the answer cites {tool}" + (f" {path}" if path else "")
        if not calls:
            # Say which: never called, or called and every call failed (what to fix differs).
            why = (
                f"{tool!r} was not called in this case"
                if not every_call
                else f"every call to {tool!r} returned an error ({len(every_call)}), "
                "so it returned no value to cite"
            )
            return outcome(self.type_name, False, expected, None, why)
        values = []
        for call in calls:
            found, value = value_at(returned_value(call), path)
            if found:
                values.append(value)
        if not values:
            why = f"no returned value has path {path!r}"
            return outcome(self.type_name, False, expected, None, why)
        shown = values[0] if len(values) == 1 else values
        passed = any(cites(answer, v) for v in values)
        why = f"the answer does not cite {shown!r} from {tool!r}"
        return outcome(self.type_name, passed, shown, answer, why)


CHECKS = (CitesToolResult(),)
