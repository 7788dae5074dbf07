"""Statistics for repeated runs: how sure a pass rate measured over N repeats is.

The Wilson score interval is used rather than the textbook "p ± z·sqrt(p(1-p)/n)" (Wald)
interval because repeats are few (3 to 20) and rates sit near 0 or 1, exactly where Wald
breaks: at 10/10 it claims the interval [1, 1], i.e. certainty from ten tries. Wilson stays
inside [0, 1], is never zero-width, and is what most tools that report flakiness use.

`t_quantile` is Student's t distribution's quantile, for the metric gates' prediction bound
(evalctl.baselines.metrics); computed here (the regularized incomplete beta function and
bisection) so that no numerical library is needed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

# Two-sided 95%: the 0.975 quantile of the standard normal distribution.
Z_95 = 1.959963984540054


@dataclass(frozen=True)
class Interval:
    low: float
    high: float

    def __contains__(self, rate: float) -> bool:
        return self.low <= rate <= self.high


def wilson_interval(passed: int, runs: int, z: float = Z_95) -> Interval:
    """The Wilson score interval for `passed` successes out of `runs` trials.

    With no runs nothing is known, so the interval is the whole of [0, 1].
    """
    if runs < 0 or not 0 <= passed <= runs:
        raise ValueError(f"need 0 <= passed <= runs, got {passed}/{runs}")
    if runs == 0:
        return Interval(0.0, 1.0)
    p = passed / runs
    z2 = z * z
    denominator = 1 + z2 / runs
    centre = (p + z2 / (2 * runs)) / denominator
    half_width = z * math.sqrt(p * (1 - p) / runs + z2 / (4 * runs * runs)) / denominator
    # Clamped: at 0/n and n/n rounding can push a bound a hair past 0 or 1.
    return Interval(max(0.0, centre - half_width), min(1.0, centre + half_width))


# A pass count, (passed, runs): the one alias the runner's confirmation and the gate share.
Counts = tuple[int, int]
# A status read as one sample, where a side recorded no counts (a one-sample baseline).
ONE_SAMPLE: Mapping[str, Counts] = MappingProxyType({"pass": (1, 1), "fail": (0, 1)})


def rate_below(before: Counts, after: Counts) -> bool:
    """Whether the pass rate `after` is below `before` at all (cross-multiplied, exact): what
    selects a drop for confirmation; False when `after` holds no run."""
    return after[1] > 0 and after[0] * before[1] < before[0] * after[1]


def rate_above(before: Counts, after: Counts) -> bool:
    """The mirror of `rate_below`."""
    return after[1] > 0 and after[0] * before[1] > before[0] * after[1]


def dropped(before: Counts, after: Counts) -> bool:
    """True when the pass rate `after` (passed, runs) is credibly below `before`.

    "Credibly" means the intervals do not overlap: the highest rate consistent with the new
    runs is below the lowest rate consistent with the old ones. This is deliberately
    conservative (non-overlapping 95% intervals is a stricter test than a two-proportion
    test at 5%): a gate that cries wolf on noise gets switched off.
    """
    return wilson_interval(*after).high < wilson_interval(*before).low


def rose(before: Counts, after: Counts) -> bool:
    """True when the pass rate `after` is credibly above `before` (the mirror of `dropped`)."""
    return wilson_interval(*after).low > wilson_interval(*before).high


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t distribution with `df` degrees of freedom."""
    if df <= 0:
        raise ValueError(f"degrees of freedom must be positive, got {df}")
    tail = 0.5 * _incomplete_beta(df / 2, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@functools.lru_cache(maxsize=256)
def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p, for Student's t distribution with `df` degrees of freedom
    (t_quantile(0.95, 4) = 2.132); by bisection on `t_cdf`, to about 1e-10."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be between 0 and 1 (exclusive), got {p}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, high * 2
    for _ in range(200):
        mid = (low + high) / 2
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-10 * max(1.0, high):
            break
    return (low + high) / 2
