"""What counts as a change between two records of the same case: the status transitions
the gate and the run diff share, and a change of model weights.

    before \\ after   pass         fail         flaky        error/skipped
    pass              unchanged    regression   regression   unscored
    fail              improvement  unchanged    improvement  unscored
    flaky             changed*     changed*     unchanged*   unscored

* A flaky case is judged on its pass rate when both sides carry pass counts (a baseline
recorded with --repeats, a run with attempts): the change is a regression when the current
Wilson 95% interval lies wholly below the baseline's (the rate really dropped), an
improvement when it lies wholly above, and otherwise `changed` (or `unchanged`), which does
not gate. Without counts a flaky baseline never gates: flakiness is the statement that
either outcome is expected, and gating on one noisy outcome would make CI flaky.
docs/flaky.md works through an example.
"""

from __future__ import annotations

from typing import Literal

from evalctl.results.models import CaseStatus
from evalctl.stats import Counts, dropped, rose

Change = Literal["regression", "improvement", "changed", "unchanged", "unscored"]


def classify(
    before: CaseStatus,
    after: CaseStatus,
    before_counts: Counts | None = None,
    after_counts: Counts | None = None,
) -> Change:
    """The change from `before` to `after`; the counts, when both are known, decide for a
    flaky `before` whether its pass rate credibly moved (see the module docstring)."""
    if after in ("error", "skipped"):
        return "unscored"
    if before == "flaky" and before_counts and after_counts:
        by_rate = _rate_change(before_counts, after_counts, after)
        if by_rate is not None:
            return by_rate
    if before == after:
        return "unchanged"
    if before == "pass":
        return "regression"
    if before == "fail":
        return "improvement"
    # flaky before, or (in a run diff) a case that was not scored before.
    return "changed"


def check_transition(before: str, after: str) -> Change:
    """A check's strict change: pass -> fail gates, fail -> pass improves, n/a changes
    nothing (the check did not apply on one side)."""
    if before == after or "n/a" in (before, after):
        return "unchanged"
    return "regression" if after == "fail" else "improvement"


def _rate_change(before: Counts, after: Counts, status: CaseStatus) -> Change | None:
    """A flaky case judged on its pass rates; None when one side has no scored run."""
    if not (known(before) and known(after)):
        return None
    if dropped(before, after):
        return "regression"
    if rose(before, after):
        return "improvement"
    return "unchanged" if status == "flaky" else "changed"


def known(counts: Counts | None) -> bool:
    """Whether `counts` hold at least one scored run."""
    return counts is not None and counts[1] > 0


def model_hash_change(before: str | None, after: str | None, first: str) -> str | None:
    """Name a change of model weights between two files (both hashes known and different):
    the same model name can serve other weights, and that is worth saying out loud."""
    if before and after and before != after:
        return (
            f"model weights changed: the {first} was made with sha256 {before}, "
            f"these results with sha256 {after}"
        )
    return None
