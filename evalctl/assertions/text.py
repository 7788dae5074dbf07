"""Assertions on the answer text: equals, contains, icontains, not-contains, regex."""

from __future__ import annotations

import re

from pydantic import field_validator

from evalctl.assertions.base import Assertion, Evidence, Outcome


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Equals(Assertion):
    """The answer, without surrounding whitespace, is exactly `value`."""

    value: str

    def default_name(self) -> str:
        return "equals"

    def evaluate(self, evidence: Evidence) -> Outcome:
        actual = evidence.answer.strip()
        passed = actual == self.value.strip()
        reason = "" if passed else "the answer differs from the expected text"
        return Outcome(passed, self.value, actual, reason)


class Contains(Assertion):
    """The answer contains `value` (case-sensitive)."""

    value: str

    def default_name(self) -> str:
        return f"contains:{_short(self.value)}"

    def evaluate(self, evidence: Evidence) -> Outcome:
        passed = self.value in evidence.answer
        reason = "" if passed else f"{self.value!r} does not occur in the answer"
        return Outcome(passed, self.value, evidence.answer, reason)


class IContains(Assertion):
    """The answer contains `value`, ignoring case."""

    value: str

    def default_name(self) -> str:
        return f"icontains:{_short(self.value)}"

    def evaluate(self, evidence: Evidence) -> Outcome:
        passed = self.value.casefold() in evidence.answer.casefold()
        reason = "" if passed else f"{self.value!r} does not occur in the answer (any case)"
        return Outcome(passed, self.value, evidence.answer, reason)


class NotContains(Assertion):
    """The answer does not contain `value` (case-sensitive; `ignore_case` to fold case)."""

    value: str
    ignore_case: bool = False

    def default_name(self) -> str:
        return f"not-contains:{_short(self.value)}"

    def evaluate(self, evidence: Evidence) -> Outcome:
        answer, value = evidence.answer, self.value
        if self.ignore_case:
            answer, value = answer.casefold(), value.casefold()
        passed = value not in answer
        reason = "" if passed else f"{self.value!r} occurs in the answer"
        return Outcome(passed, f"not {self.value!r}", evidence.answer, reason)


class Regex(Assertion):
    """`pattern` matches somewhere in the answer (Python `re.search`)."""

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

    def default_name(self) -> str:
        return f"regex:{_short(self.pattern)}"

    def evaluate(self, evidence: Evidence) -> Outcome:
        flags = re.IGNORECASE if self.ignore_case else 0
        passed = re.search(self.pattern, evidence.answer, flags) is not None
        reason = "" if passed else f"/{self.pattern}/ does not match the answer"
        return Outcome(passed, self.pattern, evidence.answer, reason)


ASSERTIONS: dict[str, type[Assertion]] = {
    "equals": Equals,
    "contains": Contains,
    "icontains": IContains,
    "not-contains": NotContains,
    "regex": Regex,
}
