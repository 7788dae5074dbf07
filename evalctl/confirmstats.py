"""The statistics of confirmation: is a case that dropped in the run really broken?

Pure functions on counts, no I/O and no model. One sample of a case cannot tell a broken
stable case from noise (a 5/5 case failing its one run sample is a 1-in-6 event when nothing
changed), so `run --baseline` re-samples the cases whose pass rate dropped, R more times with
fresh seeds, and the gate tests the baseline against those confirmation samples alone
(`evalctl.baselines.statistical`). This module holds that test and the arithmetic around it.

The model: a case (or one of its checks) passes each sample with one probability pi when
nothing changed, and the baseline's K samples, the run's m0 first samples and the R
confirmation samples are independent draws. Its outcome is x = (A, F, B): baseline passes,
first-run passes, confirmation passes. Only a drop is confirmed, so the test's statistic is

    T(x) = sup_pi P(A >= a, F <= f, B <= b)   where the first samples dropped (F/m0 < A/K),
    T(x) = 1                                  elsewhere (nothing to confirm),

and the p-value is the exact unconditional one, p(x) = sup_pi P_pi(T(X) <= T(x)): valid for
every pi (P(p <= u) <= u), however the cases were selected, since selecting by the first
samples is part of the outcome x. When the first samples were not drawn like the baseline's
(a greedy run against a sampled baseline), F is left out (m0 = 0): selection can then only
make a false alarm rarer, never likelier.

For a clean case (K/K) whose first sample and every confirmation sample fail, p is exactly
sup_pi pi^K (1 - pi)^(m0 + R) = K^K (m0+R)^(m0+R) / (K+m0+R)^(K+m0+R).

The supremum over pi is taken on a grid of GRID points refined around the best one (golden
section): the functions are polynomials of low degree, so the refined maximum is exact to
far below any level a gate uses. `holm` controls the family-wise error over many strata.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

GRID = 400
# Above it, `auto_samples` stops: so many samples per drop would cost more than the gate is
# worth, and a baseline that needs them (K = 1) needs more baseline samples instead.
MAX_CONFIRM = 20


def _binom_pmf(n: int, pi: float) -> list[float]:
    return [math.comb(n, k) * pi**k * (1.0 - pi) ** (n - k) for k in range(n + 1)]


def _cumulative(pmf: list[float]) -> list[float]:
    out, total = [], 0.0
    for value in pmf:
        total += value
        out.append(min(total, 1.0))
    return out


def _refine(f: Callable[[float], float], best: int, grid: int = GRID) -> float:
    """The maximum of `f` near grid point `best`: golden-section search between its
    neighbours (the functions here are smooth polynomials with one peak near there)."""
    lo, hi = max(best - 1, 0) / grid, min(best + 1, grid) / grid
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(40):
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if f(a) < f(b):
            lo = a
        else:
            hi = b
    return f((lo + hi) / 2.0)


@dataclass(frozen=True)
class Outcome:
    """One stratum's samples: `a` of `k` baseline passes, `f` of `m0` first-run passes (m0 =
    0: the first samples are left out), `b` of `r` confirmation passes."""

    k: int
    a: int
    m0: int
    f: int
    r: int
    b: int

    def __post_init__(self) -> None:
        if self.k < 1 or self.r < 1 or self.m0 < 0:
            raise ValueError(f"need k >= 1, r >= 1, m0 >= 0: {self}")
        if not (0 <= self.a <= self.k and 0 <= self.f <= self.m0 and 0 <= self.b <= self.r):
            raise ValueError(f"passes out of range: {self}")


def _dropped(k: int, a: int, m0: int, f: int) -> bool:
    # No first samples (m0 = 0): the selection is not part of the test; any baseline pass
    # leaves room for a drop.
    return a > 0 if m0 == 0 else f * k < a * m0


@lru_cache(maxsize=256)
def _table(k: int, m0: int, r: int) -> dict[tuple[int, int, int], float]:
    """p(x) for every outcome (a, f, b) of a (k, m0, r) stratum."""
    xs = [i / GRID for i in range(GRID + 1)]
    pmfs = [(_binom_pmf(k, x), _binom_pmf(m0, x), _binom_pmf(r, x)) for x in xs]
    # Per grid point: P(A >= a), P(F <= f), P(B <= b) for every a, f, b.
    tails = [(_cumulative(pa[::-1])[::-1], _cumulative(pf), _cumulative(pb)) for pa, pf, pb in pmfs]

    def region(a: int, f: int, b: int) -> Callable[[float], float]:
        def prob(x: float) -> float:
            pa, pf, pb = _binom_pmf(k, x), _binom_pmf(m0, x), _binom_pmf(r, x)
            return sum(pa[a:]) * sum(pf[: f + 1]) * sum(pb[: b + 1])

        return prob

    def statistic(a: int, f: int, b: int) -> float:
        if not _dropped(k, a, m0, f):
            return math.inf
        on_grid = [ta[a] * tf[f] * tb[b] for ta, tf, tb in tails]
        best = max(range(len(on_grid)), key=on_grid.__getitem__)
        return max(on_grid[best], _refine(region(a, f, b), best))

    points = [(a, f, b) for a in range(k + 1) for f in range(m0 + 1) for b in range(r + 1)]
    stat = {p: statistic(*p) for p in points}
    # p(x) = sup_pi of the mass of every outcome whose T is at most x's: accumulate the
    # outcomes in order of T and take the largest running sum over the grid.
    ordered = sorted(points, key=stat.__getitem__)
    running = [0.0] * len(xs)
    table: dict[tuple[int, int, int], float] = {}
    i = 0
    while i < len(ordered):
        j = i
        level = stat[ordered[i]]
        while j < len(ordered) and stat[ordered[j]] == level:
            a, f, b = ordered[j]
            for g, (pa, pf, pb) in enumerate(pmfs):
                running[g] += pa[a] * pf[f] * pb[b]
            j += 1
        # The region {T <= T(x)} holds x's own upper set, so p(x) >= T(x), and T is refined
        # where the grid's maximum of the running sum may sit a hair under the supremum.
        value = 1.0 if math.isinf(level) else min(1.0, max(max(running), level))
        for point in ordered[i:j]:
            table[point] = value
        i = j
    return table


def p_value(outcome: Outcome) -> float:
    """The exact unconditional p-value of a confirmed drop (module docstring)."""
    o = outcome
    if not _dropped(o.k, o.a, o.m0, o.f):
        return 1.0
    return _table(o.k, o.m0, o.r)[(o.a, o.f, o.b)]


def best_attainable(k: int, a: int, m0: int, f: int, r: int) -> float:
    """The smallest p-value R confirmation samples could still give (every one failing):
    above the level, confirming the case cannot make it a regression, so it costs nothing."""
    if not _dropped(k, a, m0, f):
        return 1.0
    return p_value(Outcome(k, a, m0, f, r, 0))


def clean_break_p(k: int, m0: int, r: int) -> float:
    """p for a clean K/K case whose first samples and all R confirmations fail."""
    n = m0 + r
    return float(k**k * n**n / (k + n) ** (k + n))


def auto_samples(n: int, k: int, alpha: float, level: float, m0: int) -> int:
    """`--confirm auto`: the smallest R that makes a clean (K/K) case failing all R fresh
    samples significant for `n` tested cases: the union bound N·K^K·R^R/(K+R)^(K+R) <= alpha,
    and the gate's own rule at its case family's `level` (Holm's first step, level/n, with
    the first samples in the outcome when `m0` > 0). MAX_CONFIRM when none up to it is."""
    if n < 1:
        return 0
    for r in range(1, MAX_CONFIRM + 1):
        if n * clean_break_p(k, 0, r) <= alpha and clean_break_p(k, m0, r) <= level / n:
            return r
    return MAX_CONFIRM


def holm(p_values: Sequence[float], level: float, family: int | None = None) -> list[bool]:
    """Holm's step-down at `level`: which of `p_values` are rejected. `family` is the number
    of hypotheses tested, when some are not listed (their p-value is 1: they are rejected
    last, if ever, so leaving them out changes only the divisors)."""
    m = max(family or 0, len(p_values))
    order = sorted(range(len(p_values)), key=p_values.__getitem__)
    rejected = [False] * len(p_values)
    for step, index in enumerate(order):
        if p_values[index] > level / (m - step):
            break
        rejected[index] = True
    return rejected


def holm_adjusted(p_values: Sequence[float], family: int | None = None) -> list[float]:
    """Holm-adjusted p-values: stratum i is rejected at level L exactly when its adjusted
    p-value is <= L. `family` as in `holm`."""
    m = max(family or 0, len(p_values))
    order = sorted(range(len(p_values)), key=p_values.__getitem__)
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for step, index in enumerate(order):
        running = max(running, min(1.0, (m - step) * p_values[index]))
        adjusted[index] = running
    return adjusted
