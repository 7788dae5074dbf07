"""Assertions on the answer text: equals, contains, icontains, not-contains, regex."""

from __future__ import annotations

import re

from pydantic import field_validator

from evalctl.assertions.base import Params, outcome
from evalctl.results.models import CheckResult
from evalctl.scoring.check import ScoringContext


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ValueParams(Params):
    value: str


class NotContainsParams(Params):
    value: str
    ignore_case: bool = False


class RegexParams(Params):
    pattern: str
    ignore_case: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from None
        return pattern


class Equals:
    """The answer, without surrounding whitespace, is exactly `value`."""

    type_name = "equals"
    params_model = ValueParams

    def evaluate(self, params: ValueParams, ctx: ScoringContext) -> CheckResult:
        actual = ctx.answer.text.strip()
        passed = actual == params.value.strip()
        why = "the answer differs from the expected text"
        return outcome(self.type_name, passed, params.value, actual, why)


class Contains:
    """The answer contains `value` (case-sensitive)."""

    type_name = "contains"
    params_model = ValueParams

    def default_name(self, params: ValueParams) -> str:
        return f"contains:{_short(params.value)}"

    def evaluate(self, params: ValueParams, ctx: ScoringContext) -> CheckResult:
        answer = ctx.answer.text
        why = f"{params.value!r} does not occur in the answer"
        return outcome(self.type_name, params.value in answer, params.value, answer, why)


class IContains:
    """The answer contains `value`, ignoring case."""

    type_name = "icontains"
    params_model = ValueParams

    def default_name(self, params: ValueParams) -> str:
        return f"icontains:{_short(params.value)}"

    def evaluate(self, params: ValueParams, ctx: ScoringContext) -> CheckResult:
        answer = ctx.answer.text
        passed = params.value.casefold() in answer.casefold()
        why = f"{params.value!r} does not occur in the answer (any case)"
        return outcome(self.type_name, passed, params.value, answer, why)


class NotContains:
    """The answer does not contain `value` (case-sensitive; `ignore_case` to fold case)."""

    type_name = "not-contains"
    params_model = NotContainsParams

    def default_name(self, params: NotContainsParams) -> str:
        return f"not-contains:{_short(params.value)}"

    def evaluate(self, params: NotContainsParams, ctx: ScoringContext) -> CheckResult:
        answer, value = ctx.answer.text, params.value
        if params.ignore_case:
            answer, value = answer.casefold(), value.casefold()
        why = f"{params.value!r} occurs in the answer"
        return outcome(
            self.type_name, value not in answer, f"not {params.value!r}", ctx.answer.text, why
        )


class Regex:
    """`pattern` matches somewhere in the answer (Python `re.search`)."""

    type_name = "regex"
    params_model = RegexParams

    def default_name(self, params: RegexParams) -> str:
        return f"regex:{_short(params.pattern)}"

    def evaluate(self, params: RegexParams, ctx: ScoringContext) -> CheckResult:
        flags = re.IGNORECASE if params.ignore_case else 0
        passed = re.search(params.pattern, ctx.answer.text, flags) is not None
        why = f"/{params.pattern}/ does not match the answer"
        return outcome(self.type_name, passed, params.pattern, ctx.answer.text, why)


CHECKS = (Equals(), Contains(), IContains(), NotContains(), Regex())
