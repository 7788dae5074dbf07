"""The confirmation p-value as first written: the whole outcome table, every statistic
refined, with float binomial terms. Slow (76 s for R = 200) and overflowing past n = 1,030,
so `evalctl.confirmstats` computes it differently; tests/test_input_bounds_round4.py checks
on small inputs that both give the same p-values."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache

GRID = 400


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


def p_value(k: int, a: int, m0: int, f: int, r: int, b: int) -> float:
    """p(x) for the outcome (k, a, m0, f, r, b), as `confirmstats.p_value` defines it."""
    if not _dropped(k, a, m0, f):
        return 1.0
    return _table(k, m0, r)[(a, f, b)]
