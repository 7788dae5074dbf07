"""Wilson 95% score intervals against published figures, and the drop/rise rule."""

from __future__ import annotations

import pytest

from evalctl.stats import dropped, rose, wilson_interval


@pytest.mark.parametrize(
    ("passed", "runs", "low", "high"),
    [
        # Published Wilson score intervals (z = 1.96), to four decimals: the 8/10, 0/10 and
        # 10/10 figures quoted in the issue, and 81/263, the example of Newcombe (1998),
        # "Two-sided confidence intervals for the single proportion", Stat. Med. 17:857.
        (8, 10, 0.4902, 0.9433),
        (0, 10, 0.0, 0.2775),
        (10, 10, 0.7225, 1.0),
        (5, 10, 0.2366, 0.7634),
        (1, 1, 0.2065, 1.0),
        (0, 1, 0.0, 0.7935),
        (81, 263, 0.2553, 0.3662),
    ],
)
def test_wilson_interval_matches_known_figures(
    passed: int, runs: int, low: float, high: float
) -> None:
    interval = wilson_interval(passed, runs)
    assert interval.low == pytest.approx(low, abs=5e-5)
    assert interval.high == pytest.approx(high, abs=5e-5)


def test_interval_is_symmetric_around_one_half() -> None:
    a = wilson_interval(3, 10)
    b = wilson_interval(7, 10)
    assert a.low == pytest.approx(1 - b.high)
    assert a.high == pytest.approx(1 - b.low)


def test_no_runs_means_nothing_is_known() -> None:
    interval = wilson_interval(0, 0)
    assert (interval.low, interval.high) == (0.0, 1.0)


@pytest.mark.parametrize(("passed", "runs"), [(-1, 3), (4, 3), (1, -1)])
def test_impossible_counts_are_refused(passed: int, runs: int) -> None:
    with pytest.raises(ValueError):
        wilson_interval(passed, runs)


def test_more_runs_narrow_the_interval() -> None:
    widths = [wilson_interval(8 * k, 10 * k) for k in (1, 2, 10)]
    assert widths[0].high - widths[0].low > widths[1].high - widths[1].low
    assert widths[1].high - widths[1].low > widths[2].high - widths[2].low


def test_drop_needs_intervals_that_do_not_overlap() -> None:
    # The worked example of docs/flaky.md.
    assert dropped((9, 10), (2, 10))  # 6%-51% lies wholly below 60%-98%
    assert not dropped((9, 10), (5, 10))  # 24%-76% overlaps
    assert not dropped((9, 10), (0, 1))  # one failed run proves nothing
    assert not dropped((9, 10), (9, 10))
    assert rose((2, 10), (9, 10))
    assert not rose((9, 10), (2, 10))
