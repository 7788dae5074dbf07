"""What a case's runs say: whether it changed for good (a changepoint) or flips (flaky).

Pure functions on a case's outcomes in run order; no I/O.

**Changes.** A case's runs are split at every point k (runs before k against runs from k
on); each split is a 2x2 table of passes and samples, tested with the gate's own exact test
(Fisher's, conditional on the total passes: `evalctl.gatestats.drop_p_value`), one-sided in
each direction (a drop, or a rise when the after side is taken as the baseline). The
candidate split is the one where the pass rates differ most against their noise (a pooled
z score); since any split could have been chosen, its p-value is multiplied by the number of
split points, by 2 for the two directions, and by the number of cases searched
(Bonferroni): the chance that any case in the search is reported changed when none did is at
most alpha. Cases whose runs all agree (every sample passed, or every one failed) cannot
show a change and are not counted as searched (each of their p-values is 1, whatever the
split). Choosing the split by the z score and then bounding its p-value by the Bonferroni
threshold is conservative: it fires only when the smallest p-value over the splits would.

**Flaky.** A case flips when its outcome (pass, fail, or flaky when its own samples
disagreed) differs from the previous run's with the same case definition (a run where its
definition changed starts afresh: that flip is the edit's, not the model's). A case that
changed once for good flips once; a flaky case flips again and again. Flaky cases are the
ones that flip at least twice, ranked by flips, with a Wilson interval on their pass rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from evalctl.gatestats import Stratum, drop_p_value
from evalctl.results.models import SCORED
from evalctl.stats import wilson_interval

DEFAULT_ALPHA = 0.05
# Splits whose exact p-value is computed, best z score first: the exact test is the costly
# part, and the best split by z is nearly always the best by p.
_CANDIDATES = 3
MIN_FLIPS = 2


@dataclass(frozen=True)
class Point:
    """One run of a case: its status, passes of samples, and the case definition's hash."""

    status: str
    passed: int
    samples: int
    definition: str = ""

    @property
    def scored(self) -> bool:
        return self.status in SCORED and self.samples > 0


@dataclass(frozen=True)
class Split:
    """The best split of a case's scored runs: `index` is the first run after it (an index
    into the points given), with the exact p-value before any correction."""

    index: int
    before: tuple[int, int]
    after: tuple[int, int]
    direction: str  # "drop" or "rise"
    p_value: float
    split_points: int


def informative(points: Sequence[Point]) -> bool:
    """Whether the case's scored runs hold both a passing and a failing sample."""
    passed = sum(p.passed for p in points if p.scored)
    samples = sum(p.samples for p in points if p.scored)
    return 0 < passed < samples


def best_split(points: Sequence[Point]) -> Split | None:
    """The split of the scored runs with the smallest exact p-value among the candidates;
    None when fewer than two runs were scored or nothing varies."""
    scored = [i for i, p in enumerate(points) if p.scored]
    if len(scored) < 2 or not informative(points):
        return None
    passes = [points[i].passed for i in scored]
    samples = [points[i].samples for i in scored]
    total_p, total_n = sum(passes), sum(samples)
    pooled = total_p / total_n
    spread = pooled * (1 - pooled)
    ranked: list[tuple[float, int]] = []
    before_p = before_n = 0
    for k in range(1, len(scored)):
        before_p += passes[k - 1]
        before_n += samples[k - 1]
        after_p, after_n = total_p - before_p, total_n - before_n
        diff = before_p / before_n - after_p / after_n
        z = abs(diff) / math.sqrt(spread * (1 / before_n + 1 / after_n))
        ranked.append((-z, k))
    ranked.sort()
    best: Split | None = None
    for _, k in ranked[:_CANDIDATES]:
        b = (sum(passes[:k]), sum(samples[:k]))
        a = (total_p - b[0], total_n - b[1])
        drop = drop_p_value(Stratum("before/after", b[1], b[0], a[1], a[0]))
        rise = drop_p_value(Stratum("after/before", a[1], a[0], b[1], b[0]))
        direction, p = ("drop", drop) if drop <= rise else ("rise", rise)
        if best is None or p < best.p_value:
            best = Split(scored[k], b, a, direction, p, len(scored) - 1)
    return best


def adjusted(split: Split, cases_searched: int) -> float:
    """The split's p-value, Bonferroni-corrected over its split points, both directions and
    the cases searched."""
    return min(1.0, split.p_value * 2 * split.split_points * max(1, cases_searched))


def flips(points: Sequence[Point]) -> int:
    """Outcome changes between consecutive scored runs with the same case definition."""
    count = 0
    previous: Point | None = None
    for point in points:
        if not point.scored:
            continue
        if previous is not None and previous.definition == point.definition:
            # A flip across an edit of the case is the edit's.
            count += _outcome(previous) != _outcome(point)
        previous = point
    return count


def _outcome(point: Point) -> str:
    if point.status == "flaky" or 0 < point.passed < point.samples:
        return "flaky"
    return "pass" if point.passed == point.samples else "fail"


def pass_interval(points: Sequence[Point]) -> tuple[int, int, float, float]:
    """(passes, samples, Wilson low, Wilson high) over the scored runs' samples."""
    passed = sum(p.passed for p in points if p.scored)
    samples = sum(p.samples for p in points if p.scored)
    interval = wilson_interval(passed, samples)
    return passed, samples, interval.low, interval.high
