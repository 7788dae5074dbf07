"""Calibration of the statistical gate, measured by simulation (issue 19, item 6). No model.

Each simulated suite has 500 cases whose true pass probabilities come from a fixed mix
(`MIX`); a baseline draws K samples per case and a run draws one, both from those
probabilities, with fixed seeds. With no true change the gate may fire at most alpha of the
time; with 10 always-passing cases broken (they now always fail) it must fire in at least
99% of runs. The full table by K and alpha is benchmarks/bench_gate_calibration.py's.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from evalctl.gatestats import Stratum, gate

Draw = Callable[[random.Random], float]


def _always_pass(_: random.Random) -> float:
    return 1.0


def _nearly_always_pass(rng: random.Random) -> float:
    return rng.uniform(0.9, 1.0)


def _nearly_always_fail(rng: random.Random) -> float:
    return rng.uniform(0.0, 0.1)


def _unstable(rng: random.Random) -> float:
    return rng.uniform(0.1, 0.9)


# (share of the suite, the case's true pass probability). Most cases pass every time, some
# pass nearly always (1 failure in 20 on average: the cases that make noise), some fail
# nearly always, a minority are unstable.
MIX: tuple[tuple[str, float, Draw], ...] = (
    ("always pass: p = 1", 0.65, _always_pass),
    ("nearly always pass: p ~ U(0.9, 1)", 0.15, _nearly_always_pass),
    ("nearly always fail: p ~ U(0, 0.1)", 0.10, _nearly_always_fail),
    ("unstable: p ~ U(0.1, 0.9)", 0.10, _unstable),
)
CASES = 500
PLANTED = 10  # always-pass cases that now always fail


@dataclass(frozen=True)
class Scenario:
    cases: int = CASES
    k: int = 10  # baseline samples per case
    run_samples: int = 1
    broken: int = 0  # always-pass cases whose run now always fails
    unstable_drop: float = 0.0  # subtracted from every unstable case's pass probability


def draw_suite(rng: random.Random, scenario: Scenario) -> list[Stratum]:
    """One simulated suite: true probabilities from `MIX`, a baseline and a run drawn."""
    strata: list[Stratum] = []
    index = 0
    for name, share, draw in MIX:
        for _ in range(round(share * scenario.cases)):
            p = draw(rng)
            run_p = p
            if name.startswith("always pass") and index < scenario.broken:
                run_p = 0.0
            elif name.startswith("unstable"):
                run_p = max(0.0, p - scenario.unstable_drop)
            base = _binomial(rng, scenario.k, p)
            run = _binomial(rng, scenario.run_samples, run_p)
            strata.append(Stratum(f"case-{index}", scenario.k, base, scenario.run_samples, run))
            index += 1
    return strata


def _binomial(rng: random.Random, n: int, p: float) -> int:
    if p >= 1.0:
        return n
    if p <= 0.0:
        return 0
    return sum(1 for _ in range(n) if rng.random() < p)


def firing_rates(
    scenario: Scenario, alphas: tuple[float, ...], trials: int, seed: int
) -> list[float]:
    """For each alpha, the fraction of simulated runs in which the default gate reports any
    regression (the same simulated runs for every alpha)."""
    rng = random.Random(seed)
    fired = [0] * len(alphas)
    for _ in range(trials):
        suite = draw_suite(rng, scenario)
        for i, alpha in enumerate(alphas):
            fired[i] += gate(suite, alpha).failed
    return [count / trials for count in fired]


def test_the_mix_adds_up() -> None:
    assert sum(share for _, share, _ in MIX) == 1.0
    assert len(draw_suite(random.Random(0), Scenario())) == CASES


def test_no_true_change_false_alarm_rate_at_most_alpha() -> None:
    alphas = (0.05, 0.01)
    for alpha, rate in zip(
        alphas, firing_rates(Scenario(k=10), alphas, 1000, seed=19), strict=True
    ):
        assert rate <= alpha, f"alpha {alpha}: false alarms in {rate:.1%} of 1,000 runs"


def test_ten_broken_stable_cases_are_caught_in_99_percent_of_runs() -> None:
    [rate] = firing_rates(Scenario(k=10, broken=PLANTED), (0.05,), 1000, seed=20)
    assert rate >= 0.99, f"caught in {rate:.1%} of 1,000 runs"


def test_the_planted_regression_names_the_broken_cases() -> None:
    verdict = gate(draw_suite(random.Random(21), Scenario(k=10, broken=PLANTED)))
    named = {c.stratum.key for c in verdict.regressions}
    assert {f"case-{i}" for i in range(PLANTED)} <= named
    # Only drops are named: every other case named had a lower rate in the run.
    assert all(c.stratum.dropped for c in verdict.regressions)
