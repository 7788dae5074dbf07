"""Assertions on the answer text: equals, contains, icontains, not-contains, regex.

Each is one `TextCheck`: a test of the answer text by its parameters, and what its default
name says it is about.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import field_validator

from evalctl.assertions import pattern as patterns
from evalctl.assertions.base import Params, TextParams, outcome
from evalctl.results.models import CheckResult
from evalctl.scoring.check import Check, ScoringContext

P = TypeVar("P", bound=Params)
# (passed, expected, actual, why it failed)
Verdict = tuple[bool, Any, Any, str]


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ValueParams(TextParams):
    value: str


class NotContainsParams(TextParams):
    value: str
    ignore_case: bool = False


class RegexParams(Params):
    pattern: str
    ignore_case: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        problem = patterns.compile_problem(pattern)
        if problem:
            raise ValueError(problem)
        return pattern


@dataclass(frozen=True)
class TextCheck(Check[P]):
    """An assertion type judging the answer text with `test`; its default name is the type
    plus what `about` picks from the parameters (the type alone without it)."""

    type_name: str
    params_model: type[P]
    test: Callable[[P, str], Verdict]
    about: Callable[[P], str] | None = None

    def default_name(self, params: P) -> str:
        if self.about is None:
            return self.type_name
        return f"{self.type_name}:{_short(self.about(params))}"

    def evaluate(self, params: P, ctx: ScoringContext) -> CheckResult:
        try:
            return outcome(self.type_name, *self.test(params, ctx.answer.text))
        except patterns.PatternTimeoutError as exc:
            # No verdict was reached: the pattern is at fault, not the answer.
            return CheckResult(name=self.type_name, status="error", message=str(exc))


def _equals(params: ValueParams, answer: str) -> Verdict:
    """The answer, without surrounding whitespace, is exactly `value`."""
    actual = answer.strip()
    why = "the answer differs from the expected text"
    return actual == params.value.strip(), params.value, actual, why


def _contains(params: ValueParams, answer: str) -> Verdict:
    """`value` occurs in the answer (case-sensitive)."""
    why = f"{params.value!r} does not occur in the answer"
    return params.value in answer, params.value, answer, why


def _icontains(params: ValueParams, answer: str) -> Verdict:
    """`value` occurs in the answer, ignoring case."""
    found = params.value.casefold() in answer.casefold()
    return found, params.value, answer, f"{params.value!r} does not occur in the answer (any case)"


def _not_contains(params: NotContainsParams, answer: str) -> Verdict:
    """`value` does not occur in the answer (`ignore_case` folds case)."""
    fold = str.casefold if params.ignore_case else str
    absent = fold(params.value) not in fold(answer)
    return absent, f"not {params.value!r}", answer, f"{params.value!r} occurs in the answer"


def _regex(params: RegexParams, answer: str) -> Verdict:
    """`pattern` matches somewhere in the answer (`re.search` syntax, under a time limit)."""
    found = patterns.search(params.pattern, answer, ignore_case=params.ignore_case)
    return found, params.pattern, answer, f"/{params.pattern}/ does not match the answer"


def _value(params: ValueParams | NotContainsParams) -> str:
    return params.value


CHECKS = (
    TextCheck("equals", ValueParams, _equals),
    TextCheck("contains", ValueParams, _contains, _value),
    TextCheck("icontains", ValueParams, _icontains, _value),
    TextCheck("not-contains", NotContainsParams, _not_contains, _value),
    TextCheck("regex", RegexParams, _regex, lambda params: params.pattern),
)
