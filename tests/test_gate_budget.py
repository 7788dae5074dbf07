"""The gate's calibration end to end (issue 28): one false-alarm budget for the exit code
across suites, one broken stable case caught, and what confirmation costs, measured on
simulated suites through the runner's confirmation step and the real `compare_baseline`
(tests/gate_simulation.py); and the confirmation test's own validity, by enumeration.
benchmarks/bench_gate_calibration.py prints the full tables docs/gating.md carries."""

from __future__ import annotations

import math

import pytest

from evalctl import confirmstats
from evalctl.confirmstats import Outcome
from tests.gate_simulation import allocate, rates


def test_the_mix_allocates_every_case() -> None:
    assert sum(allocate(14)) == 14 and sum(allocate(50)) == 50


@pytest.mark.parametrize(("suites", "trials"), [(1, 300), (4, 120), (10, 50)])
def test_exit_code_false_alarms_stay_within_alpha(suites: int, trials: int) -> None:
    fired, extra = rates(trials, seed=100 + suites, suites=suites, cases=14)
    assert fired <= 0.05, f"{suites} suites: exit 1 in {fired:.1%} of unchanged runs"
    assert extra <= 0.25, f"{extra:.2f} extra samples per case on an unchanged run"


def test_without_confirmation_the_suites_share_the_budget_too() -> None:
    fired, extra = rates(150, seed=7, suites=4, cases=14, confirm=0)
    assert fired <= 0.05 and extra == 0


@pytest.mark.parametrize(("cases", "trials"), [(14, 200), (50, 100)])
def test_one_broken_stable_case_is_caught(cases: int, trials: int) -> None:
    fired, _ = rates(trials, seed=200 + cases, suites=1, cases=cases, broken=1)
    assert fired >= 0.99, f"{cases} cases: caught in {fired:.1%} of runs"


def _binom(n: int, k: int, p: float) -> float:
    return math.comb(n, k) * p**k * (1 - p) ** (n - k)


@pytest.mark.parametrize(("k", "m0", "r"), [(5, 0, 4), (5, 1, 4), (3, 1, 6), (5, 2, 3)])
def test_the_confirmation_p_value_is_valid_for_every_pass_probability(
    k: int, m0: int, r: int
) -> None:
    """P(p <= u) <= u under "nothing changed", by exact enumeration of every outcome."""
    outcomes = [
        Outcome(k, a, m0, f, r, b)
        for a in range(k + 1)
        for f in range(m0 + 1)
        for b in range(r + 1)
    ]
    p_values = {o: confirmstats.p_value(o) for o in outcomes}
    for pi in [i / 40 for i in range(41)]:
        mass = {o: _binom(k, o.a, pi) * _binom(m0, o.f, pi) * _binom(r, o.b, pi) for o in outcomes}
        for level in sorted(set(p_values.values())):
            below = sum(m for o, m in mass.items() if p_values[o] <= level)
            assert below <= level * (1 + 1e-6), (pi, level, below)


def test_a_clean_break_has_the_closed_form_p_value() -> None:
    assert confirmstats.p_value(Outcome(5, 5, 1, 0, 4, 0)) == pytest.approx(5**10 / 10**10)
    assert confirmstats.p_value(Outcome(5, 5, 0, 0, 4, 0)) == pytest.approx(5**5 * 4**4 / 9**9)
    # A case that did not drop is never evidence.
    assert confirmstats.p_value(Outcome(5, 5, 1, 1, 4, 0)) == 1.0


@pytest.mark.parametrize(("n", "r"), [(14, 4), (50, 5), (100, 7), (500, 10)])
def test_auto_confirm_matches_the_union_bound_table(n: int, r: int) -> None:
    # K = 5, first sample drawn like the baseline's (it enters the test).
    assert confirmstats.auto_samples(n, 5, 0.05, 0.035, 1) == r


def test_holm_adjusted_p_values_reject_what_holm_rejects() -> None:
    ps = [0.001, 0.04, 0.012, 0.3]
    adjusted = confirmstats.holm_adjusted(ps, family=6)
    assert confirmstats.holm(ps, 0.05, family=6) == [q <= 0.05 for q in adjusted]
    assert adjusted[0] == pytest.approx(0.006)
