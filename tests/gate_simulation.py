"""The gate end to end on simulated suites: a baseline of K samples per case and a run of one
sample per case are drawn from known pass probabilities (the docs' mix), the runner's own
confirmation step (`runner.confirm.confirm_drops`) picks and re-samples the drops, and the
real `compare_baseline` gives the exit code. Shared by tests/test_gate_budget.py (which
keeps the calibration) and benchmarks/bench_gate_calibration.py (which prints the tables
docs/gating.md carries)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalctl.baselines.budget import Budget
from evalctl.baselines.gate import compare_baseline
from evalctl.baselines.model import Baseline, BaselineSampling, PassCount
from evalctl.baselines.statistical import StatisticalRule
from evalctl.chat import Sampling
from evalctl.cli.confirm_option import plan_from
from evalctl.errors import ExitCode
from evalctl.results.models import Attempt, CaseResult, CheckResult
from evalctl.runner.confirm import confirm_drops
from tests import factories as f
from tests.test_gate_calibration import MIX

K = 5
PERTURBED = 0.3


@dataclass(frozen=True)
class Trial:
    """What one simulated comparison gave."""

    failed: bool
    named: frozenset[str]
    extra_samples: int
    cases: int


def allocate(cases: int) -> list[int]:
    """How many of `cases` each MIX row gets: its share, rounded by largest remainder so
    the counts add up to `cases` exactly."""
    raw = [share * cases for _, share, _ in MIX]
    counts = [int(x) for x in raw]
    order = sorted(range(len(raw)), key=lambda i: raw[i] - counts[i], reverse=True)
    for i in order[: cases - sum(counts)]:
        counts[i] += 1
    return counts


def _draws(rng: random.Random, n: int, p: float) -> list[bool]:
    return [rng.random() < p for _ in range(n)]


def _check(passed: bool) -> CheckResult:
    status = "pass" if passed else "fail"
    return CheckResult(name="answer", status=status, passed=passed)


def simulate(
    rng: random.Random,
    suites: int,
    cases: int,
    *,
    broken: int = 0,
    alpha: float = 0.05,
    confirm: int | None = None,
) -> Trial:
    """One comparison: `suites` suites of `cases` cases, the first `broken` always-passing
    cases of the first suite broken (they now always fail); `confirm` as `--confirm`."""
    truth: dict[str, tuple[float, float]] = {}  # key -> (baseline p, run p)
    for s in range(suites):
        index = 0
        for (_, _, draw), count in zip(MIX, allocate(cases), strict=True):
            for _ in range(count):
                p = draw(rng)
                key = f"s{s}/c{index:03d}"
                run_p = 0.0 if s == 0 and p >= 1.0 and index < broken else p
                truth[key] = (p, run_p)
                index += 1
    baselines: dict[str, Any] = {}
    pass_counts: dict[str, PassCount] = {}
    check_counts: dict[str, dict[str, PassCount]] = {}
    run_cases: list[CaseResult] = []
    for key, (p, run_p) in truth.items():
        passes = sum(_draws(rng, K, p))
        baselines[key] = "pass" if passes == K else "fail" if passes == 0 else "flaky"
        pass_counts[key] = PassCount(passed=passes, runs=K)
        check_counts[key] = {"answer": PassCount(passed=passes, runs=K)}
        [ok] = _draws(rng, 1, run_p)
        case = f.case(key, "pass" if ok else "fail")
        case.checks = [_check(ok)]
        case.attempts = [
            Attempt(status=case.status, latency_ms=1.0, sampling=Sampling(temperature=0.0, seed=0))
        ]
        run_cases.append(case)
    sampling = {
        f"s{s}": BaselineSampling(
            samples=K, seeds=list(range(K)), temperature=PERTURBED, top_p=1.0, perturbed=True
        )
        for s in range(suites)
    }
    baseline = Baseline(
        provider="sim",
        model="sim",
        baselines=baselines,
        pass_counts=pass_counts,
        check_counts=check_counts,
        sampling=sampling,
    )
    run = f.run(run_cases)
    extra = 0

    def resample(case: CaseResult, setup: object, samplings: list[Sampling]) -> None:
        nonlocal extra
        run_p = truth[case.key][1]
        outcomes = _draws(rng, len(samplings), run_p)
        extra += len(outcomes)
        for ok, sent in zip(outcomes, samplings, strict=True):
            status = "pass" if ok else "fail"
            case.attempts.append(
                Attempt(status=status, latency_ms=1.0, sampling=sent, confirmation=True)
            )
        case.confirmation_check_counts = {
            "answer": PassCount(passed=sum(outcomes), runs=len(outcomes))
        }

    if confirm != 0:
        plan = plan_from(baseline, "sim.json", confirm, Budget(alpha))
        setups: dict[str, Any] = {c.key: object() for c in run_cases}
        run.settings.confirm = confirm_drops(plan, run_cases, setups, resample=resample)
    cmp = compare_baseline(baseline, run, rule=StatisticalRule(baseline, run, alpha))
    named = frozenset(c.key for c in cmp.regressions) | frozenset(
        c.key for c in cmp.check_regressions
    )
    return Trial(cmp.exit_code == ExitCode.GATE_FAILED, named, extra, len(truth))


def rates(
    trials: int, seed: int, suites: int, cases: int, *, broken: int = 0, confirm: int | None = None
) -> tuple[float, float]:
    """(share of trials that exited 1, extra samples per case on average)."""
    rng = random.Random(seed)
    results: Sequence[Trial] = [
        simulate(rng, suites, cases, broken=broken, confirm=confirm) for _ in range(trials)
    ]
    fired = sum(t.failed for t in results) / trials
    extra = sum(t.extra_samples for t in results) / sum(t.cases for t in results)
    return fired, extra
