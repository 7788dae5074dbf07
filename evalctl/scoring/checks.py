"""Generic check helpers. Every check records what was expected and what was found, so a
failure in a results file explains itself without re-running anything."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from evalctl.results.models import CheckResult, pass_or_fail
from evalctl.scoring.answer import Answer


def equals(
    name: str,
    expected: Any,
    actual: Any,
    *,
    normalize: Callable[[Any], Any] | None = None,
) -> CheckResult:
    """`actual` equals `expected` (both passed through `normalize` first, if given)."""
    norm = normalize or (lambda v: v)
    passed = actual is not None and norm(actual) == norm(expected)
    message = "" if passed else f"expected {expected!r}, got {actual!r}"
    return CheckResult(
        name=name, status=pass_or_fail(passed), expected=expected, actual=actual, message=message
    )


def _allowed(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def mapping_entries(
    name: str,
    expected: Mapping[str, str | Sequence[str]],
    actual: Mapping[str, str] | None,
) -> CheckResult:
    """Every expected key is present *with an allowed value*; extra keys are fine.

    Checking keys alone would pass a recipe that maps linux -> "linux" when the assets say
    "Linux". An expected value may be a list of equally valid spellings.
    """
    if actual is None:
        return CheckResult(
            name=name,
            status="fail",
            expected=dict(expected),
            actual=None,
            message="no mapping submitted",
        )
    wrong = []
    for key, value in expected.items():
        allowed = _allowed(value)
        got = actual.get(key)
        if got is None:
            wrong.append(f"{key}: missing (expected {allowed[0]!r})")
        elif got not in allowed:
            wrong.append(f"{key}: expected {' or '.join(map(repr, allowed))}, got {got!r}")
    return CheckResult(
        name=name,
        status=pass_or_fail(not wrong),
        expected=dict(expected),
        actual=dict(actual),
        message="; ".join(wrong),
    )


def failed(name: str, expected: Any, message: str) -> CheckResult:
    """A check that could not even be attempted (nothing was submitted)."""
    return CheckResult(name=name, status="fail", expected=expected, actual=None, message=message)


def json_object(answer: Answer) -> tuple[dict[str, Any] | None, str]:
    """The answer's JSON (its one reading, evalctl.scoring.answer) when it is an object:
    (object, "") or (None, why not)."""
    if not answer.has_json:
        return None, answer.json_error
    if not isinstance(answer.json, dict):
        return None, f"expected a JSON object, got {type(answer.json).__name__}"
    return answer.json, ""


def json_fields(
    expected: Mapping[str, Any],
    actual: Mapping[str, Any] | None,
    fields: Iterable[str],
    *,
    error: str = "",
    normalize: Callable[[Any], Any] | None = None,
) -> list[CheckResult]:
    """One check per field of a JSON answer; if there is no object, each says why."""
    results = []
    for field in fields:
        if actual is None:
            results.append(failed(field, expected.get(field), error or "no JSON object"))
        elif field not in actual:
            results.append(failed(field, expected.get(field), f"field {field!r} is missing"))
        else:
            results.append(equals(field, expected.get(field), actual[field], normalize=normalize))
    return results
