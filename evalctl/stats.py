"""Statistics for repeated runs: how sure a pass rate measured over N repeats is.

The Wilson score interval is used rather than the textbook "p ± z·sqrt(p(1-p)/n)" (Wald)
interval because repeats are few (3 to 20) and rates sit near 0 or 1, exactly where Wald
breaks: at 10/10 it claims the interval [1, 1], i.e. certainty from ten tries. Wilson stays
inside [0, 1], is never zero-width, and is what most tools that report flakiness use.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

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


def dropped(before: tuple[int, int], after: tuple[int, int]) -> bool:
    """True when the pass rate `after` (passed, runs) is credibly below `before`.

    "Credibly" means the intervals do not overlap: the highest rate consistent with the new
    runs is below the lowest rate consistent with the old ones. This is deliberately
    conservative (non-overlapping 95% intervals is a stricter test than a two-proportion
    test at 5%): a gate that cries wolf on noise gets switched off.
    """
    return wilson_interval(*after).high < wilson_interval(*before).low


def rose(before: tuple[int, int], after: tuple[int, int]) -> bool:
    """True when the pass rate `after` is credibly above `before` (the mirror of `dropped`)."""
    return wilson_interval(*after).low > wilson_interval(*before).high
