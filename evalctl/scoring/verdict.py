"""The whole rule of a case's status, from its checks to the status over repeats.

One attempt (`attempt_verdict`):

- a check in `error` (it could not reach a verdict: a judge that did not answer) makes the
  attempt `error`, unscored, with the message `check 'name': why` for each such check;
- else, over the checks that applied (`n/a` ones had nothing to test and are left out),
  the attempt is `pass` when at least one passed and the passed ones carry at least
  `threshold` of the weight (a check's `weight`, 1 when unset; the case's `threshold`, 1 by
  default: no check failed); else `fail`.

Repeats (`fold_repeats`): any attempt `error` makes the case `error`; every one `pass` is
`pass`, none `fail`, some `flaky`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evalctl.results.models import CaseStatus, CheckResult

# Three checks of weight 1/3 that all pass must reach a threshold of 1.
_TOLERANCE = 1e-9


@dataclass(frozen=True)
class AttemptVerdict:
    """An attempt's status, and why when it is `error`."""

    status: CaseStatus
    error: str | None = None


def weighted_status(checks: Sequence[CheckResult], threshold: float = 1.0) -> CaseStatus:
    """`pass` or `fail` by weight and threshold, ignoring `n/a` (see the module docstring)."""
    applied = [c for c in checks if not c.not_applicable]
    if not any(c.passed for c in applied):
        return "fail"
    weights = [1.0 if c.weight is None else c.weight for c in applied]
    passed = sum(w for w, c in zip(weights, applied, strict=True) if c.passed)
    return "pass" if passed / sum(weights) >= threshold - _TOLERANCE else "fail"


def attempt_verdict(checks: Sequence[CheckResult], threshold: float = 1.0) -> AttemptVerdict:
    """The status of one scored attempt, with the error override."""
    unjudged = [c for c in checks if c.status == "error"]
    if unjudged:
        return AttemptVerdict(
            "error", "; ".join(f"check {c.name!r}: {c.message}" for c in unjudged)
        )
    return AttemptVerdict(weighted_status(checks, threshold))


def fold_repeats(statuses: Sequence[CaseStatus]) -> CaseStatus:
    """A case's status over its repeats' statuses."""
    if "error" in statuses:
        return "error"
    passes = list(statuses).count("pass")
    if passes == len(statuses):
        return "pass"
    return "fail" if passes == 0 else "flaky"
