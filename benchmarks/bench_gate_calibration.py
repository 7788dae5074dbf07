"""The statistical gate's false-alarm and detection rates by K and alpha, and its speed.

The simulation is tests/test_gate_calibration.py's (500 cases from its stated mix, one run
sample per case, fixed seeds); this script runs it over K in {3, 5, 7, 10} and alpha in
{0.01, 0.05}, 1,000 simulated runs per cell, for three truths: no change, 10 always-passing
cases broken (they now always fail), and a diffuse drop (every unstable case's pass
probability 0.3 lower, no case broken); then K in {3, 5} with three run samples per case.
It prints the Markdown tables docs/gating.md carries, then the metric gates' false alarms
per metric (tests/test_metric_gates.py's simulated suites, 2 x trials draws, the bound asked
at its stated rate with no margin), then the gate's time on 1,000 cases of four shapes
(median of 20 calls).

    python benchmarks/bench_gate_calibration.py [--trials 1000]   (0: the timings only)
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from evalctl.gatestats import Stratum, gate, gate_checks  # noqa: E402
from tests.gate_simulation import rates  # noqa: E402
from tests.test_gate_calibration import (  # noqa: E402
    CASES,
    MIX,
    PLANTED,
    Scenario,
    draw_suite,
    firing_rates,
)
from tests.test_metric_gates import _run, _simulated_comparison  # noqa: E402

KS = (3, 5, 7, 10)
ALPHAS = (0.01, 0.05)


def _timing(strata: list[Stratum], calls: int = 20) -> float:
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        gate(strata)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    args = parser.parse_args()
    trials: int = args.trials

    if trials > 0:
        _budget_table(max(trials // 4, 50))
        _tables(trials)
        _check_table(trials)
        _metric_table(2 * trials)
    _speed()
    return 0


def _budget_table(trials: int) -> None:
    """The exit code end to end (tests/gate_simulation.py): the runner's confirmation step
    and the real compare, small suites of the docs' mix, K = 5, one run sample, alpha 0.05."""
    print(f"Exit code of compare, {trials} simulated runs per row, K = 5, alpha 0.05, with")
    print("confirmation (`run --baseline`, --confirm auto) unless the row says otherwise\n")
    print("| suites x cases | truth | exit 1 | extra samples per case |")
    print("| --- | --- | --- | --- |")
    rows = [
        (1, 14, 0, None),
        (4, 14, 0, None),
        (10, 14, 0, None),
        (1, 50, 0, None),
        (4, 50, 0, None),
        (4, 14, 0, 0),
        (1, 14, 1, None),
        (1, 14, 2, None),
        (1, 14, 3, None),
        (1, 50, 1, None),
        (1, 50, 2, None),
        (1, 50, 3, None),
        (1, 14, 1, 0),
    ]
    for index, (suites, cases, broken, confirm) in enumerate(rows):
        fired, extra = rates(
            trials, seed=9000 + index, suites=suites, cases=cases, broken=broken, confirm=confirm
        )
        truth = "no change" if not broken else f"{broken} stable case(s) broken"
        if confirm == 0:
            truth += " (--confirm 0)"
        print(f"| {suites} x {cases} | {truth} | {fired:.1%} | {extra:.2f} |", flush=True)
    print()


def _tables(trials: int) -> None:
    print(f"{trials} simulated runs per cell, 500 cases, one run sample per case\n")
    print("| K | alpha | false alarms, no change | 10 stable cases broken | diffuse drop |")
    print("| --- | --- | --- | --- | --- |")
    for k in KS:
        rows = zip(
            firing_rates(Scenario(k=k), ALPHAS, trials, seed=1000 + k),
            firing_rates(Scenario(k=k, broken=PLANTED), ALPHAS, trials, seed=2000 + k),
            firing_rates(Scenario(k=k, unstable_drop=0.3), ALPHAS, trials, seed=3000 + k),
            strict=True,
        )
        for alpha, (null, broken, diffuse) in zip(ALPHAS, rows, strict=True):
            print(f"| {k} | {alpha} | {null:.1%} | {broken:.1%} | {diffuse:.1%} |", flush=True)

    print("\nWith --repeats 3 in the run (three samples per case):\n")
    print("| K | alpha | false alarms, no change | 10 stable cases broken | diffuse drop |")
    print("| --- | --- | --- | --- | --- |")
    for k in (3, 5):
        scenarios = (
            Scenario(k=k, run_samples=3),
            Scenario(k=k, run_samples=3, broken=PLANTED),
            Scenario(k=k, run_samples=3, unstable_drop=0.3),
        )
        columns = [firing_rates(sc, ALPHAS, trials, seed=4000 + k) for sc in scenarios]
        for i, alpha in enumerate(ALPHAS):
            cells = " | ".join(f"{column[i]:.1%}" for column in columns)
            print(f"| {k} | {alpha} | {cells} |", flush=True)


def _metric_table(trials: int) -> None:
    """Nothing changed: how often each metric gate fails, against its stated rate alpha / 3
    (three gated at tolerance 0, where the bound alone decides). The tokens' mean holds it;
    the latency percentiles over 8 cases run above it (docs/gating.md, "Metric gates")."""
    print(f"\nMetric gates, nothing changed, {trials} simulated comparisons (8 cases, K = 5):\n")
    print("| alpha | stated per metric | tokens_out | latency p50 | latency p95 | any |")
    print("| --- | --- | --- | --- | --- | --- |")
    names = ("tokens_out", "latency_p50", "latency_p95")
    for alpha in ALPHAS:
        rng = random.Random(11)
        run = _run([], tokens_out=0.0, latency_p50=0.0, latency_p95=0.0)
        draws = [_simulated_comparison(rng, run, alpha) for _ in range(trials)]
        cells = " | ".join(f"{sum(n in d for d in draws) / trials:.2%}" for n in names)
        fired = sum(bool(d) for d in draws) / trials
        print(f"| {alpha} | {alpha / 3:.2%} | {cells} | {fired:.2%} |", flush=True)


def _check_suite(rng: random.Random, k: int, broken: int) -> list[list[Stratum]]:
    """500 cases of three checks each, the checks of a case failing together.

    A sample of a case goes wrong with probability 1 - p (p from the mix); a sample that goes
    wrong fails each check with probability 0.7, so a case's checks fail together, not
    independently. `broken` always-passing cases fail their second check in the run.
    """
    cases = []
    for index, p in enumerate(_probabilities(rng)):
        base = [_sample(rng, p) for _ in range(k)]
        run = _sample(rng, p)
        if index < broken:
            run = (run[0], 0, run[2])
        cases.append(
            [Stratum(f"case-{index}:{c}", k, sum(b[c] for b in base), 1, run[c]) for c in range(3)]
        )
    return cases


def _probabilities(rng: random.Random) -> list[float]:
    return [draw(rng) for _, share, draw in MIX for _ in range(round(share * CASES))]


def _sample(rng: random.Random, p: float) -> tuple[int, int, int]:
    if rng.random() < p:
        return (1, 1, 1)
    a, b, c = (0 if rng.random() < 0.7 else 1 for _ in range(3))
    return (a, b, c)


def _check_table(trials: int) -> None:
    print("\nChecks (gate_checks), three per case failing together, one run sample:\n")
    print("| K | alpha | false alarms, no change | one check broken in 10 stable cases |")
    print("| --- | --- | --- | --- |")
    for k in (5, 10):
        rates = []
        for broken in (0, PLANTED):
            rng = random.Random(5000 + k + broken)
            fired = [0, 0]
            for _ in range(trials):
                cases = _check_suite(rng, k, broken)
                for i, alpha in enumerate(ALPHAS):
                    fired[i] += gate_checks(cases, alpha).failed
            rates.append([f / trials for f in fired])
        for i, alpha in enumerate(ALPHAS):
            print(f"| {k} | {alpha} | {rates[0][i]:.1%} | {rates[1][i]:.1%} |", flush=True)


def _speed() -> None:
    rng = random.Random(7)
    shapes = {
        "1,000 cases of the mix, K=10, 1 run sample": draw_suite(
            rng, Scenario(cases=1000, k=10, broken=PLANTED)
        ),
        # The slow shapes: every case unstable and informative, with repeats in the run.
        "1,000 unstable cases, K=10, 3 run samples": [
            Stratum(f"c{i}", 10, rng.randint(1, 9), 3, rng.randint(0, 3)) for i in range(1000)
        ],
        "1,000 unstable cases, K=10, 10 run samples": [
            Stratum(f"c{i}", 10, rng.randint(1, 9), 10, rng.randint(0, 10)) for i in range(1000)
        ],
        "1,000 stable cases all broken, K=10, 3 run samples": [
            Stratum(f"c{i}", 10, 10, 3, 0) for i in range(1000)
        ],
    }
    print()
    for name, strata in shapes.items():
        print(f"gate on {name}: {_timing(strata) * 1000:.1f} ms (median of 20)")


if __name__ == "__main__":
    sys.exit(main())
