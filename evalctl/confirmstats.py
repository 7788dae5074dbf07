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

The arithmetic stays well under a second for any allowed R (docs/gating.md): binomial terms
are taken in log space (no overflow past n = 1,030), and p(x) is computed for the outcome
asked, not for the whole outcome table. T falls as a rises and grows with f and b, so the
region {T <= T(x)} is, for each (a, f), the b up to a threshold, and one walk per f finds the
thresholds; T is refined only where its grid maximum and a log-concave bound from the grid
(`_upper`) cannot decide a comparison. The results are those of the whole-table computation
(tests/confirmstats_reference.py) to rounding.
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

GRID = 400
# Above it, `auto_samples` stops: so many samples per drop would cost more than the gate is
# worth, and a baseline that needs them (K = 1) needs more baseline samples instead.
MAX_CONFIRM = 20
# The most confirmation samples `--confirm R` may ask for (docs/gating.md): far past any R
# that changes a verdict, and the arithmetic stays under a second up to it
# (benchmarks/bench_confirm_arithmetic.py).
MAX_CONFIRM_SAMPLES = 500


@lru_cache(maxsize=64)
def _log_comb(n: int) -> tuple[float, ...]:
    # math.log of the exact integer: no overflow (comb(1031, 515) is past a float's range,
    # which the old float products hit) and correctly rounded.
    return tuple(math.log(math.comb(n, j)) for j in range(n + 1))


def _pmf_terms(n: int, x: float, lo: int, hi: int) -> list[float]:
    """P(Bin(n, x) = j) for j in lo..hi (inclusive), in log space: no term overflows or
    underflows before it is a probability."""
    if hi < lo:
        return []
    if x <= 0.0:
        return [1.0 if j == 0 else 0.0 for j in range(lo, hi + 1)]
    if x >= 1.0:
        return [1.0 if j == n else 0.0 for j in range(lo, hi + 1)]
    base, step = n * math.log1p(-x), math.log(x) - math.log1p(-x)
    # log C(n, j) + n log(1-x) + j (log x - log(1-x)), as iterators that run in C.
    slope = map(operator.mul, range(lo, hi + 1), itertools.repeat(step))
    logs = map(
        operator.add, _log_comb(n)[lo : hi + 1], map(operator.add, slope, itertools.repeat(base))
    )
    return list(map(math.exp, logs))


def _binom_pmf(n: int, pi: float) -> list[float]:
    return _pmf_terms(n, pi, 0, n)


def _cumulative(pmf: list[float]) -> list[float]:
    out = list(itertools.accumulate(pmf))
    # Rounding may carry a sum past 1; it only grows, so the values past 1 are one tail.
    over = bisect.bisect_right(out, 1.0)
    out[over:] = [1.0] * (len(out) - over)
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


# Above it, (k+1)(m0+1) baseline-by-first-run outcomes would make every p-value cost too
# much, so the first samples are left out (m0 = 0): valid (module docstring), a little
# less powerful. Far above any outcome the arithmetic before this bound finished for.
MAX_OUTCOME_PAIRS = 2_000


def _first_kept(k: int, m0: int) -> bool:
    return (k + 1) * (m0 + 1) <= MAX_OUTCOME_PAIRS


@dataclass(frozen=True)
class _Tables:
    """Per grid point g (pi = g/GRID): the columns P(A >= a), P(F <= f), P(B <= b) and the
    point masses P(A = a), P(F = f), each a tuple over the grid."""

    tail_a: tuple[tuple[float, ...], ...]  # [a][g]
    cum_f: tuple[tuple[float, ...], ...]  # [f][g]
    cum_b: tuple[tuple[float, ...], ...]  # [b][g]
    pmf_a: tuple[tuple[float, ...], ...]  # [a][g]
    pmf_f: tuple[tuple[float, ...], ...]  # [f][g]
    cum_b_rows: tuple[tuple[float, ...], ...]  # [g][b]


def _columns(rows: list[list[float]]) -> tuple[tuple[float, ...], ...]:
    return tuple(zip(*rows, strict=True))


@lru_cache(maxsize=32)
def _tables(k: int, m0: int, r: int) -> _Tables:
    xs = [i / GRID for i in range(GRID + 1)]
    pa = [_binom_pmf(k, x) for x in xs]
    pf = [_binom_pmf(m0, x) for x in xs]
    pb = [_binom_pmf(r, x) for x in xs]
    tails = [_cumulative(p[::-1])[::-1] for p in pa]
    cum_f = [_cumulative(p) for p in pf]
    cum_b = [_cumulative(p) for p in pb]
    return _Tables(
        _columns(tails),
        _columns(cum_f),
        _columns(cum_b),
        _columns(pa),
        _columns(pf),
        tuple(tuple(row) for row in cum_b),
    )


def _tail_sum(n: int, x: float, lo: int, hi: int) -> float:
    """P(lo <= Bin(n, x) <= hi), from the terms within 12 standard deviations (+20) of the
    mean or of the nearer end: the terms left out are below e^-72 of the largest one kept,
    far under a float's rounding of the sum."""
    if 0.0 < x < 1.0:
        mean, width = n * x, 12.0 * math.sqrt(n * x * (1.0 - x)) + 20.0
        lo, hi = (
            max(lo, math.floor(min(hi, mean) - width)),
            min(hi, math.ceil(max(lo, mean) + width)),
        )
    return sum(_pmf_terms(n, x, lo, hi))


def _region_prob(k: int, m0: int, r: int, a: int, f: int, b: int) -> Callable[[float], float]:
    def prob(x: float) -> float:
        return _tail_sum(k, x, a, k) * _tail_sum(m0, x, 0, f) * _tail_sum(r, x, 0, b)

    return prob


def _on_grid(k: int, m0: int, r: int, a: int, f: int, b: int) -> list[float]:
    t = _tables(k, m0, r)
    ab = map(operator.mul, t.tail_a[a], t.cum_b[b])
    # m0 = 0: P(F <= 0) is 1 at every grid point.
    return list(ab) if m0 == 0 else list(map(operator.mul, ab, t.cum_f[f]))


@lru_cache(maxsize=65_536)
def _statistic(k: int, m0: int, r: int, a: int, f: int, b: int) -> float:
    """T(a, f, b) of a dropped outcome: its largest grid value, refined around it."""
    on_grid = _on_grid(k, m0, r, a, f, b)
    best = on_grid.index(max(on_grid))  # the first maximum
    return max(on_grid[best], _refine(_region_prob(k, m0, r, a, f, b), best))


def _upper(on_grid: list[float], best: int) -> float:
    """A bound above the supremum near grid point `best` from the grid alone (inf when there
    is none): the function is log-concave (a product of binomial tails), so its log lies
    below the chords through the two grid points left of the refined interval and the two
    right of it, extended into it."""
    if best < 2 or best > GRID - 2 or min(on_grid[best - 2 : best + 3]) <= 0.0:
        return math.inf
    p0, p1, p3, p4 = (math.log(on_grid[best + d]) for d in (-2, -1, 1, 2))
    s1, s2 = p1 - p0, p3 - p4  # u runs 0..2 over [best-1, best+1] in grid steps

    def low(u: float) -> float:
        return min(p1 + s1 * u, p3 + s2 * (2.0 - u))

    candidates = [0.0, 2.0]
    if s1 + s2 != 0.0:
        cross = (p3 + 2.0 * s2 - p1) / (s1 + s2)
        if 0.0 < cross < 2.0:
            candidates.append(cross)
    # A margin for rounding in the logs: the bound only decides where it is clear.
    return math.exp(max(low(u) for u in candidates)) * (1.0 + 1e-9)


def _at_most(k: int, m0: int, r: int, a: int, f: int, b: int, level: float) -> bool:
    """T(a, f, b) <= level, refining T only where the grid alone cannot tell."""
    on_grid = _on_grid(k, m0, r, a, f, b)
    best = on_grid.index(max(on_grid))
    if on_grid[best] > level:
        return False
    if _upper(on_grid, best) <= level:
        return True
    return _statistic(k, m0, r, a, f, b) <= level


@lru_cache(maxsize=4_096)
def _p_value(k: int, m0: int, r: int, a: int, f: int, b: int) -> float:
    """p(x) = sup_pi P(T(X) <= T(x)). T falls as a rises and grows with f and b, so the region
    {T <= T(x)} holds, for each (a, f), the b up to a threshold that rises with a: one walk
    per f finds every threshold, with T computed only near it."""
    level = _statistic(k, m0, r, a, f, b)
    t = _tables(k, m0, r)
    thresholds: list[tuple[int, int, int]] = []  # (a, f, highest b in the region)
    for ff in range(m0 + 1):
        top = -1
        for aa in range(k + 1):
            if not _dropped(k, aa, m0, ff):
                continue
            while top < r and _at_most(k, m0, r, aa, ff, top + 1, level):
                top += 1
            if top >= 0:
                thresholds.append((aa, ff, top))
    mass = 0.0
    for g in range(GRID + 1):
        cum_b = t.cum_b_rows[g]
        total = sum(t.pmf_a[aa][g] * t.pmf_f[ff][g] * cum_b[top] for aa, ff, top in thresholds)
        mass = max(mass, total)
    # The region holds x's own upper set, so p(x) >= T(x), and T is refined where the grid's
    # maximum of the mass may sit a hair under the supremum.
    return min(1.0, max(mass, level))


def p_value(outcome: Outcome) -> float:
    """The exact unconditional p-value of a confirmed drop (module docstring)."""
    o = outcome
    if not _dropped(o.k, o.a, o.m0, o.f):
        return 1.0
    if not _first_kept(o.k, o.m0):
        return _p_value(o.k, 0, o.r, o.a, 0, o.b)
    return _p_value(o.k, o.m0, o.r, o.a, o.f, o.b)


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
