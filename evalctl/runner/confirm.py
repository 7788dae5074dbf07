"""Confirm drops by re-sampling (`evalctl run --baseline B --confirm R|auto|0`).

After a run's cases are scored, every case the gate will test statistically whose pass rate
(or one of whose checks' pass rates) fell below the baseline's is sampled R more times, with
fresh seeds from the baseline's K on, at the baseline's sampling (a greedy suite at the
documented perturbation). The samples are appended to the case's attempts, marked
`confirmation`; the case's own status and pass rate stay what its run samples said. `compare`
then tests the baseline against the confirmation samples alone (evalctl.confirmstats).

A drop that could not become a regression however the samples came out (its best attainable
p-value is above the level of its family's first Holm step) is not re-sampled: a case or
check that did not drop, or cannot matter, costs nothing. The command line builds the plan
from the baseline file (`cli/run.py`), since the runner reads no baseline itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from evalctl import confirmstats
from evalctl.chat import Sampling
from evalctl.results.models import CaseResult, ConfirmSettings, SampleSettings
from evalctl.runner.attempt import CaseSetup
from evalctl.runner.sampling import sample_sampling
from evalctl.stats import ONE_SAMPLE, Counts, rate_below


class ConfirmPlan(BaseModel):
    """What the baseline says about each case, and how much to re-sample. Recorded in the
    run's manifest (runner.resume), so a resumed run confirms by the plan it started with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    baseline_path: str
    # None: `--confirm auto`; 0: off.
    samples: int | None
    # The gate's false-alarm budget and its shares, and the rule of a suite that names none:
    # taken where `compare` takes them (baselines.gating.gate_defaults), so the run
    # re-samples exactly what the gate will test.
    alpha: float
    case_level: float
    check_level: float
    # Per case key: the baseline's (passed, runs), and per check name the same.
    case_counts: dict[str, Counts]
    check_counts: dict[str, dict[str, Counts]]
    # Per suite: how the baseline sampled it (temperature, top_p, seeds), where recorded.
    sampling: dict[str, SampleSettings] = {}
    default_rule: Literal["statistical", "strict"] = "statistical"
    # Suites the gate judges by the strict rule (`[suite] gate = "strict"`, or no rule of
    # their own under a strict `default_rule`): not tested, so not re-sampled. The runner
    # fills it from the suites it loaded (`with_suite_rules`).
    strict_suites: frozenset[str] = frozenset()

    def same_baseline(self, other: ConfirmPlan) -> bool:
        """Whether `other` was made from a baseline holding what this one's did (its path
        aside)."""
        return (self.case_counts, self.check_counts, self.sampling) == (
            other.case_counts,
            other.check_counts,
            other.sampling,
        )

    def with_suite_rules(self, rules: Mapping[str, str | None]) -> ConfirmPlan:
        """The plan for suites whose own gate rules are `rules` (suite -> `[suite] gate`,
        None where it names none), judged as `compare` will judge them."""
        strict = {suite for suite, rule in rules.items() if (rule or self.default_rule) == "strict"}
        return self.model_copy(update={"strict_suites": frozenset(strict)})


@dataclass(frozen=True)
class _Candidate:
    case: CaseResult
    setup: CaseSetup
    before: Counts
    checks: dict[str, tuple[Counts, Counts]]  # name -> (baseline, run)


def _run_check_counts(case: CaseResult) -> dict[str, Counts]:
    if case.check_counts:
        return {name: c.as_tuple() for name, c in case.check_counts.items()}
    return {c.name: ONE_SAMPLE[c.status] for c in case.checks if c.status in ONE_SAMPLE}


def _first_like_baseline(base: SampleSettings | None, run_sampling: Sampling | None) -> bool:
    """Whether the run's own samples were drawn as the baseline's were (same temperature
    and top_p, seeds of its own): only then do they enter the test as exchangeable draws."""
    if base is None or run_sampling is None or base.samples < 2:
        return False
    if run_sampling.temperature is None or not run_sampling.temperature:
        return False
    same = run_sampling.temperature == base.temperature and run_sampling.top_p == base.top_p
    return same and run_sampling.seed not in base.seeds


def _seed_start(base: SampleSettings | None, k: int, drawn: int | None = None) -> int:
    start = max(base.seeds) + 1 if base is not None and base.seeds else k
    # Above every seed an earlier process of this run handed out: a resumed confirmation
    # draws afresh, never a copy of a sample that may already be on record.
    return start if drawn is None else max(start, drawn + 1)


def confirm_drops(
    plan: ConfirmPlan,
    cases: list[CaseResult],
    setups: Mapping[str, CaseSetup],
    *,
    resample: Callable[[CaseResult, CaseSetup, list[Sampling]], None],
    drawn: Mapping[str, int] | None = None,
) -> ConfirmSettings:
    """Re-sample the cases that dropped (module docstring), through `resample`, which
    appends the confirmation attempts to the case. Returns what was done, for the record.

    Resumed (`drawn`: per suite, the highest confirmation seed an earlier process of the run
    handed out), a case that already holds its confirmation samples keeps them and is not
    sampled again; the others are sampled with seeds above `drawn`. Which cases are tested,
    and R, depend on the run's own samples alone, so they come out as they did the first
    time."""
    drawn = drawn or {}
    candidates: list[_Candidate] = []
    tested_checks = 0
    for case in cases:
        before = plan.case_counts.get(case.key)
        setup = setups.get(case.key)
        if (
            before is None
            or setup is None
            or case.status not in ("pass", "fail")
            or case.deterministic
            or case.suite in plan.strict_suites
        ):
            continue
        run_checks = _run_check_counts(case)
        checks = {
            name: (was, run_checks[name])
            for name, was in plan.check_counts.get(case.key, {}).items()
            if name in run_checks
        }
        tested_checks += len(checks)
        candidates.append(_Candidate(case, setup, before, checks))
    k = max((c.before[1] for c in candidates), default=1)
    first_like = {
        suite: _first_like_baseline(plan.sampling.get(suite), _sampling_of(cases, suite))
        for suite in {c.case.suite for c in candidates}
    }
    typical_m0 = 1 if any(first_like.values()) else 0
    auto = plan.samples is None
    r = (
        confirmstats.auto_samples(len(candidates), k, plan.alpha, plan.case_level, typical_m0)
        if auto
        else plan.samples or 0
    )
    if auto and r >= confirmstats.MAX_CONFIRM:
        r = 0  # no affordable R can confirm anything against this baseline (K too small)
    settings = ConfirmSettings(
        baseline=plan.baseline_path,
        samples=r,
        auto=auto,
        baseline_samples=k,
        tested_cases=len(candidates),
        tested_checks=tested_checks,
        alpha=plan.alpha,
        case_level=plan.case_level,
        check_level=plan.check_level,
        first_like_baseline=first_like,
    )
    if r == 0:
        return settings
    case_bar = plan.case_level / max(len(candidates), 1)
    check_bar = plan.check_level / max(tested_checks, 1)
    for cand in candidates:
        m0 = cand.case.pass_counts()[1] if first_like.get(cand.case.suite) else 0
        drops = []
        after = cand.case.pass_counts()
        if rate_below(cand.before, after):
            drops.append(_attainable(cand.before, after, m0, r) <= case_bar)
        for was, now in cand.checks.values():
            if rate_below(was, now):
                drops.append(_attainable(was, now, m0, r) <= check_bar)
        if not drops:
            continue
        if not any(drops):
            settings.futile.append(cand.case.key)
            continue
        seeds = settings.seeds.setdefault(cand.case.suite, [])
        if cand.case.confirmed:  # confirmed before the run was resumed: its samples stand
            done = [a.sampling.seed for a in cand.case.attempts if a.confirmation and a.sampling]
            seeds.extend(seed for seed in done if seed is not None and seed not in seeds)
            settings.confirmed.append(cand.case.key)
            continue
        base = plan.sampling.get(cand.case.suite)
        start = _seed_start(base, cand.before[1], drawn.get(cand.case.suite))
        samplings = [_confirm_sampling(cand.setup, base, start + i) for i in range(r)]
        seeds.extend(s.seed for s in samplings if s.seed is not None and s.seed not in seeds)
        resample(cand.case, cand.setup, samplings)
        settings.confirmed.append(cand.case.key)
    return settings


def _attainable(before: Counts, after: Counts, m0: int, r: int) -> float:
    f = after[0] if m0 else 0
    return confirmstats.best_attainable(before[1], before[0], m0 and after[1], f, r)


def _sampling_of(cases: list[CaseResult], suite: str) -> Sampling | None:
    """What the run's first case of `suite` was sent (its own samples' sampling)."""
    for case in cases:
        if case.suite != suite:
            continue
        for attempt in case.attempts:
            if attempt.sampling is not None and not attempt.confirmation:
                return attempt.sampling
        return case.sampling
    return None


def _confirm_sampling(setup: CaseSetup, base: SampleSettings | None, seed: int) -> Sampling:
    """A confirmation sample's sampling: the baseline's temperature and top_p where it
    recorded them, else the case's own as `--samples` would perturb it; a fresh seed."""
    if base is not None and base.temperature is not None:
        top_p = base.top_p if base.top_p is not None else setup.sampling.top_p
        return Sampling(temperature=base.temperature, top_p=top_p, seed=seed)
    return sample_sampling(setup.sampling, seed)
