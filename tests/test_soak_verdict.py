"""The leak verdict on synthetic anonymous-memory series (evalctl.stability.verdict).

Each series is (request index, bytes) for requests 0..N, as a soak samples them; the
numbers are shaped like the embedded model's daemon (about 180 MiB anonymous).
"""

from __future__ import annotations

import random

import pytest

from evalctl.stability.verdict import MIN_R_SQUARED, fit_line, judge

MIB = 1024 * 1024
BASE = 180 * MIB
N = 25
WARMUP = 5


def series(values: list[float]) -> list[tuple[int, int]]:
    return [(i, int(v)) for i, v in enumerate(values)]


def warm_then(after: list[float]) -> list[tuple[int, int]]:
    """A cold start (anon lower before the first request), then `after` from request 1 on."""
    return series([BASE - 30 * MIB, *after])


def test_flat_is_no_leak() -> None:
    v = judge(warm_then([BASE] * N), warmup=WARMUP)
    assert v.verdict == "no leak"
    assert v.growth_pct == 0
    assert v.slope_bytes_per_request == 0
    assert v.window_samples == N - WARMUP + 1


def test_linear_growth_is_a_leak() -> None:
    # 1 MiB per request: +11% over the 20 requests after the warm-up.
    v = judge(warm_then([BASE + i * MIB for i in range(N)]), warmup=WARMUP)
    assert v.verdict == "leak"
    assert v.slope_bytes_per_request == pytest.approx(MIB, rel=1e-6)
    assert v.r_squared == pytest.approx(1.0)
    assert v.growth_pct is not None and v.growth_pct > 5
    assert "growing steadily" in v.reason
    assert v.late_slope_bytes_per_request == pytest.approx(MIB, rel=1e-6)


def test_one_early_step_then_flat_is_no_leak() -> None:
    # A 15% step right after the warm-up's baseline, then a plateau: growth is over the
    # threshold, but a line fits it badly.
    after = [BASE] * WARMUP + [BASE * 1.15] * (N - WARMUP)
    v = judge(warm_then(after), warmup=WARMUP)
    assert v.growth_pct is not None and v.growth_pct > 5
    assert v.r_squared is not None and v.r_squared < MIN_R_SQUARED
    assert v.verdict == "no leak"
    assert "fits badly" in v.reason


def test_a_step_a_third_in_then_a_plateau_is_no_leak() -> None:
    # The daemon's allocator does this (an 11 MiB step when a request first lands in a fresh
    # per-thread arena): the line fits fairly well, but the second half is flat.
    rng = random.Random(5)
    after = [BASE] * (WARMUP + 6) + [BASE * 1.07] * (N - WARMUP - 6)
    noisy = [v + rng.uniform(-0.3, 0.3) * MIB for v in after]
    v = judge(warm_then(noisy), warmup=WARMUP)
    assert v.growth_pct is not None and v.growth_pct > 5
    assert v.r_squared is not None and v.r_squared >= MIN_R_SQUARED
    assert v.late_slope_bytes_per_request is not None
    assert v.slope_bytes_per_request is not None
    assert v.late_slope_bytes_per_request < v.slope_bytes_per_request / 2
    assert v.verdict == "no leak"
    assert "flat in the second half" in v.reason


def test_a_leak_that_grows_in_chunks_is_a_leak() -> None:
    # +1.5 MiB every third request, as an allocator hands out memory in chunks.
    values = [BASE + (i // 3) * 1.5 * MIB for i in range(N)]
    v = judge(warm_then(values), warmup=WARMUP)
    assert v.verdict == "leak", v.reason


def test_step_inside_the_warm_up_is_ignored() -> None:
    after = [BASE * 1.2] * N  # the whole step happened during warm-up
    v = judge(series([BASE, BASE * 1.1, *after]), warmup=WARMUP)
    assert v.verdict == "no leak"
    assert v.growth_pct == 0


def test_noisy_flat_is_no_leak() -> None:
    rng = random.Random(7)
    values = [BASE + rng.uniform(-2, 2) * MIB for _ in range(N)]
    v = judge(warm_then(values), warmup=WARMUP)
    assert v.verdict == "no leak"
    assert v.growth_pct is not None and abs(v.growth_pct) < 5


def test_noisy_flat_with_a_spike_at_the_end_is_no_leak() -> None:
    rng = random.Random(3)
    values = [BASE + rng.uniform(-1, 1) * MIB for _ in range(N - 1)] + [BASE * 1.07]
    v = judge(warm_then(values), warmup=WARMUP)
    assert v.growth_pct is not None and v.growth_pct > 5
    assert v.verdict == "no leak"


def test_slow_growth_just_over_the_bound_is_a_leak() -> None:
    # 5.5% over the window, with noise a tenth of the step size.
    rng = random.Random(11)
    per_request = BASE * 0.055 / (N - WARMUP)
    values = [BASE + max(0, i - WARMUP + 1) * per_request for i in range(N)]
    noisy = [v + rng.uniform(-0.1, 0.1) * per_request for v in values]
    noisy[WARMUP - 1] = values[WARMUP - 1]  # the baseline sample itself, exactly
    noisy[-1] = values[-1]
    v = judge(warm_then(noisy), warmup=WARMUP)
    assert v.growth_pct == pytest.approx(5.5, abs=0.01)
    assert v.verdict == "leak"


def test_slow_growth_just_under_the_bound_is_no_leak() -> None:
    per_request = BASE * 0.045 / (N - WARMUP)
    values = [BASE + max(0, i - WARMUP + 1) * per_request for i in range(N)]
    v = judge(warm_then(values), warmup=WARMUP)
    assert v.r_squared == pytest.approx(1.0)
    assert v.verdict == "no leak"
    assert "within 5%" in v.reason


def test_threshold_is_configurable() -> None:
    values = [BASE + i * 0.2 * MIB for i in range(N)]  # about 2% over the window
    assert judge(warm_then(values), warmup=WARMUP).verdict == "no leak"
    assert judge(warm_then(values), warmup=WARMUP, threshold_pct=1.0).verdict == "leak"


def test_shrinking_memory_is_no_leak() -> None:
    values = [BASE - i * MIB for i in range(N)]
    assert judge(warm_then(values), warmup=WARMUP).verdict == "no leak"


def test_too_few_samples_is_inconclusive() -> None:
    v = judge(series([BASE, BASE, BASE * 2]), warmup=1)
    assert v.verdict == "inconclusive"
    assert "needs 3" in v.reason
    assert judge([], warmup=0).verdict == "inconclusive"


def test_baseline_is_the_first_sample_after_the_warm_up() -> None:
    # Sampled every 4 requests: the first sample at or after request 5 is request 8.
    points = [(r, BASE + r * MIB) for r in (0, 4, 8, 12, 16, 20)]
    v = judge(points, warmup=5)
    assert v.baseline_request == 8
    assert v.baseline_bytes == BASE + 8 * MIB
    assert v.window_samples == 4


def test_fit_line() -> None:
    fit = fit_line([0, 1, 2, 3], [1, 3, 5, 7])
    assert (fit.slope, fit.intercept, fit.r_squared) == (2, 1, 1)
    assert fit_line([0, 1, 2], [5, 5, 5]).r_squared == 0  # nothing to explain
    with pytest.raises(ValueError):
        fit_line([1], [1])
    with pytest.raises(ValueError):
        fit_line([2, 2], [1, 3])
