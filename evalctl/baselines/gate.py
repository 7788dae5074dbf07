"""The CI gate: a run compared to its baseline (`evalctl compare BASELINE RESULTS`).

Each case in the baseline is decided by a `GateRule` and its change sorted into the
categories of `baselines.comparison`, whose verdict is the exit code. Two rules (`RULES`,
`compare --gate NAME`): `statistical`, the default (`baselines.statistical`), gates a drop
in pass rate only when an exact test says it is more than sampling noise, and lists the
other drops as "changed, within noise"; `strict` is the original rule, any pass -> fail
gates, with the status transitions of `baselines.changes`. A rule decides one case and one
check at a time, so another can be swapped in without touching the sorting or the
renderers; `RULES` holds a factory per name that is given the baseline and the run first,
so a rule that weighs the whole suite does that work before it is asked about each case.

Beside the rule: the platform line (what differs between the baseline's platform and the
run's) and the suite metrics, which gate only where a suite asked (`baselines.metrics`).

Check level, strict rule (a baseline of schema version 2 records each check's outcome):
inside a case that failed in the baseline and fails now, a check that went pass -> fail is
a *check regression* and gates like a case regression; fail -> pass is a *check
improvement*. A case that regressed or improved as a whole lists its checks in its own
entry instead. Checks of a flaky case (either side) are not compared: they come from one
repeat of a noisy case, and the case's pass rate already judges it. Inside a case that
passes on both sides (an `assert` case with a threshold below 1 tolerates some failed
checks), a check that went pass -> fail is listed as a *check regression inside a passing
case*: a note, not gating, since the suite's author declared that verdict by the threshold.
`n/a` (nothing to test) is neither outcome: a change to or from n/a is not a regression.

Under the statistical rule a check is weighed like a case (its counts, else its status as
one sample) inside any case whose own rate held, flaky ones included: a check regression
there gates (but inside a case passing on both sides is still a note), and a drop within
noise is listed apart.

Exit code: 1 on any regression (case, check or metric) or orphaned case, else 3 when a case
could not be scored, else 0.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path

from evalctl.baselines.changes import (
    check_transition,
    classify,
    known,
    model_hash_change,
)
from evalctl.baselines.comparison import (
    CaseChange,
    CheckChange,
    CheckDetail,
    Comparison,
    NewCase,
    RateInterval,
    UnscoredCase,
)
from evalctl.baselines.metrics import CostOf, metric_reports
from evalctl.baselines.model import Baseline, BaselineStatus
from evalctl.baselines.scope import in_scope
from evalctl.baselines.statistical import (
    DEFAULT_ALPHA,
    Evidence,
    GateChange,
    GateRule,
    StatisticalRule,
)
from evalctl.errors import BadInputError
from evalctl.results.models import CaseResult, CheckResult, CheckStatus, RunResult
from evalctl.results.platform import platform_diff
from evalctl.stats import Counts

DEFAULT_GATE = StatisticalRule.name
# How far above its stated rate the metric bound was measured to run (latency percentiles).
METRIC_MARGIN = 1.25


class StrictRule(GateRule):
    """Any pass -> fail gates; a flaky baseline gates only on a credible drop of its pass
    rate (`baselines.changes`)."""

    name = "strict"

    def case_change(
        self, before: BaselineStatus, before_counts: Counts | None, case: CaseResult
    ) -> GateChange:
        return classify(before, case.status, before_counts, case.pass_counts())

    def check_change(self, key: str, before: CheckStatus, check: CheckResult) -> GateChange:
        return check_transition(before, check.status)

    def evidence(self, key: str, check: str | None = None) -> Evidence | None:
        return None

    def judged_by(self, key: str) -> str:
        return self.name


STRICT = StrictRule()

# Builds a rule for one comparison, from everything it compares, at a false-alarm rate.
RuleFactory = Callable[[Baseline, RunResult, float], GateRule]


def _strict(baseline: Baseline, run: RunResult, alpha: float) -> GateRule:
    # Strict for every suite that names no rule of its own; exact cases stay exact, and a
    # suite with `gate = "statistical"` is still weighed.
    return StatisticalRule(baseline, run, alpha, default=STRICT.name)


RULES: dict[str, RuleFactory] = {StatisticalRule.name: StatisticalRule, STRICT.name: _strict}


def rule_named(
    name: str, baseline: Baseline, run: RunResult, alpha: float = DEFAULT_ALPHA
) -> GateRule:
    """The rule `compare --gate NAME` asks for, built for this baseline and run."""
    factory = RULES.get(name)
    if factory is None:
        raise BadInputError(
            f"unknown gate {name!r} (known: {', '.join(sorted(RULES))})", field="--gate"
        )
    if not 0.0 < alpha < 1.0:
        raise BadInputError(
            f"alpha must be between 0 and 1 (exclusive), not {alpha}", field="--alpha"
        )
    return factory(baseline, run, alpha)


def compare_baseline(
    baseline: Baseline,
    run: RunResult,
    *,
    results_path: Path | None = None,
    baseline_path: Path | None = None,
    rule: GateRule | None = None,
    cost_of: CostOf | None = None,
) -> Comparison:
    """Compare `run` to `baseline` under `rule` (default: the statistical rule at alpha
    0.05). The paths are reported and spell out the update command; `cost_of` prices a
    sample's usage for the cost metric (None: no cost is reported)."""
    if rule is None:
        rule = StatisticalRule(baseline, run)
    results = {c.key: c for c in run.cases}
    # The metric gates' share of the exit code's budget; latency percentiles over a few cases
    # measured about a fifth above the t bound's stated rate, so the share is asked of it
    # with that margin (docs/gating.md, "Metric gates").
    budget = rule.budget
    metrics, metric_regressions = metric_reports(
        baseline, run, cost_of, alpha=budget.metrics / METRIC_MARGIN
    )
    cmp = Comparison(
        baseline_file=str(baseline_path) if baseline_path else None,
        results_file=str(results_path) if results_path else None,
        baseline_provider=baseline.provider,
        baseline_model=baseline.model,
        run_id=run.run_id,
        run_provider=run.provider.name,
        run_model=run.provider.model,
        gate=rule.name,
        alpha=rule.alpha,
        platform_changes=(
            platform_diff(baseline.platform, run.platform)
            if baseline.platform is not None and run.platform is not None
            else []
        ),
        suites=dict(rule.suites),
        rules=dict(rule.rules),
        confirmation=rule.confirmation,
        metrics=metrics,
        metric_regressions=metric_regressions,
        warnings=_mismatch_warnings(baseline, run),
        update_command=update_command(results_path, baseline_path),
    )
    for key, expected in sorted(baseline.baselines.items()):
        case = results.get(key)
        if case is None:
            if in_scope(run, key):
                cmp.orphaned.append(key)
            else:
                cmp.out_of_scope += 1
            continue
        _sort_case(cmp, rule, baseline, expected, case)

    for key, case in sorted(results.items()):
        if key in baseline.baselines:
            continue
        if case.status == "error":
            # An error is unscored wherever it happens: it still means infrastructure failed.
            cmp.unscored.append(_unscored(case, in_baseline=False))
        else:
            cmp.new.append(NewCase(key=key, status=case.status))
    cmp.warnings.extend(_seed_warnings(baseline, run))
    if (cmp.within_noise or cmp.check_within_noise) and not baseline.pass_counts:
        # Said where it bites: against one sample, the drops above can never gate alone.
        cmp.warnings.append(
            "the baseline holds one sample per case: a single case or check that fails is "
            "within noise on its own, and a suite fails only when several of its cases fail "
            "together; re-record it with `evalctl baseline --samples 5` (docs/gating.md)"
        )
    return cmp


def _sort_case(
    cmp: Comparison, rule: GateRule, baseline: Baseline, expected: BaselineStatus, case: CaseResult
) -> None:
    """Decide one case of the baseline and file it under its category."""
    counts = baseline.pass_counts.get(case.key)
    before_counts = counts.as_tuple() if counts else None
    change = rule.case_change(expected, before_counts, case)
    if change == "unscored":
        cmp.unscored.append(_unscored(case, in_baseline=True))
        return
    entry = CaseChange(
        key=case.key,
        baseline=expected,
        current=case.status,
        failed_checks=[c.name for c in case.checks if c.failed],
        failures=[CheckDetail.of(c) for c in case.checks if c.failed],
    )
    evidence = rule.evidence(case.key)
    if evidence is not None:
        entry = _with_evidence(entry, evidence)
    elif expected == "flaky":
        entry = _with_rates(entry, change, before_counts, case.pass_counts())
    if change == "regression":
        cmp.regressions.append(entry)
    elif change == "improvement":
        cmp.improvements.append(entry)
    elif change == "within_noise":
        cmp.within_noise.append(entry)
    elif change == "changed":
        cmp.flaky_changes.append(entry)
    else:
        cmp.unchanged.append(case.key)
        _sort_checks(cmp, rule, baseline, expected, case)


def _sort_checks(
    cmp: Comparison, rule: GateRule, baseline: Baseline, expected: BaselineStatus, case: CaseResult
) -> None:
    """The checks of a case whose own status held: which moved, and where each is listed."""
    checks = baseline.checks.get(case.key, {})
    weighed = rule.judged_by(case.key) == "statistical"
    if not weighed and expected == "flaky":
        return  # strict: one repeat of a noisy case says nothing about its checks
    worse, better, noise = _check_changes(rule, checks, case)
    cmp.check_within_noise += noise
    if expected == "pass" and case.status == "pass":
        # The suite's threshold below 1 declared this verdict: a note, not a gate.
        cmp.passing_check_regressions += worse
    elif weighed or (expected == "fail" and case.status == "fail"):
        cmp.check_regressions += worse
        cmp.check_improvements += better


def _check_changes(
    rule: GateRule, before: dict[str, CheckStatus], case: CaseResult
) -> tuple[list[CheckChange], list[CheckChange], list[CheckChange]]:
    """Checks of one case that dropped (first), rose (second), dropped within noise (third)."""
    worse: list[CheckChange] = []
    better: list[CheckChange] = []
    noise: list[CheckChange] = []
    for check in case.checks:
        was = before.get(check.name)
        evidence = rule.evidence(case.key, check.name)
        if was is None and evidence is None:
            continue
        # A sampled baseline may count a check whose last sample was n/a.
        was = was or "n/a"
        change = rule.check_change(case.key, was, check)
        if change not in ("regression", "improvement", "within_noise"):
            continue
        entry = CheckChange(
            key=case.key,
            check=check.name,
            baseline=was,
            current=check.status,
            case_status=case.status,
            expected=check.expected,
            actual=check.actual,
            reason=check.message,
        )
        if evidence is not None:
            entry = entry.model_copy(
                update={
                    "baseline_rate": RateInterval.of(evidence.baseline),
                    "current_rate": RateInterval.of(evidence.run),
                    "p_value": evidence.p_value,
                    "adjusted_p_value": evidence.adjusted_p_value,
                    "evidence": evidence.text,
                }
            )
        {"regression": worse, "improvement": better, "within_noise": noise}[change].append(entry)
    return worse, better, noise


def _with_evidence(entry: CaseChange, evidence: Evidence) -> CaseChange:
    """Attach the statistical gate's rates, p-values and reason to a case's entry."""
    if evidence.change == "unchanged":
        return entry
    return entry.model_copy(
        update={
            "baseline_rate": RateInterval.of(evidence.baseline),
            "current_rate": RateInterval.of(evidence.run) if evidence.run[1] else None,
            "p_value": evidence.p_value,
            "adjusted_p_value": evidence.adjusted_p_value,
            "cause": evidence.cause,
            "reason": evidence.text,
            "confirmation": evidence.confirmation,
        }
    )


def _seed_warnings(baseline: Baseline, run: RunResult) -> list[str]:
    """A run whose samples were sent seeds the baseline's samples used repeats its draws:
    they are not independent of the baseline, and the gate's error rates assume they are."""
    warnings = []
    for suite, sampled in sorted(baseline.sampling.items()):
        used = set(sampled.seeds)
        if not used or not sampled.temperature:
            continue
        overlap = sorted(
            {
                a.sampling.seed
                for c in run.cases
                if c.suite == suite
                for a in c.attempts
                if a.sampling is not None and a.sampling.seed in used and a.sampling.temperature
            }
        )
        if overlap:
            shown = ", ".join(str(seed) for seed in overlap[:5])
            warnings.append(
                f"suite {suite!r}: the run sent seeds the baseline's samples used ({shown}): "
                "those samples repeat the baseline's draws instead of drawing afresh"
            )
    return warnings


def _with_rates(
    entry: CaseChange, change: GateChange, before: Counts | None, after: Counts
) -> CaseChange:
    """Attach both pass rates to a flaky baseline's entry and say why it gates or not."""
    current = RateInterval.of(after) if known(after) else None
    if before is None:
        return entry.model_copy(
            update={
                "current_rate": current,
                "reason": "the baseline holds no pass counts (not recorded with --repeats), "
                "so a flaky case cannot gate; re-record it from `evalctl run --repeats N`",
            }
        )
    was = RateInterval.of(before)
    if current is None:
        reason = "no scored runs to compare"
    elif change == "regression":
        reason = f"pass rate dropped: {current.describe()} now, {was.describe()} in the baseline"
    elif change == "improvement":
        reason = f"pass rate rose: {current.describe()} now, {was.describe()} in the baseline"
    else:
        reason = (
            f"{current.describe()} now overlaps {was.describe()} in the baseline: "
            "not a credible change"
        )
    return entry.model_copy(
        update={"baseline_rate": was, "current_rate": current, "reason": reason}
    )


def update_command(results_path: Path | None, baseline_path: Path | None) -> str:
    parts = ["evalctl", "baseline", "--from", str(results_path or "RESULTS.json")]
    if baseline_path is not None:
        parts += ["--out", str(baseline_path)]
    return shlex.join(parts)


def _unscored(case: CaseResult, *, in_baseline: bool) -> UnscoredCase:
    if case.status == "skipped":
        reason = case.skip_reason or "skipped"
    else:
        reason = case.error or "infrastructure error"
        if case.server_crashed:
            reason = f"server crashed: {reason}"
    return UnscoredCase(key=case.key, status=case.status, reason=reason, in_baseline=in_baseline)


def _mismatch_warnings(baseline: Baseline, run: RunResult) -> list[str]:
    # Not errors: comparing across models is sometimes exactly the question being asked.
    # But a reader must not mistake the result for a like-for-like gate.
    warnings = []
    if baseline.written_as < 2:
        warnings.append(
            "the baseline records case statuses only (schema_version 1): a check that "
            "regresses inside a failing case cannot be seen; re-record it with `evalctl baseline`"
        )
    if baseline.provider != run.provider.name:
        warnings.append(
            f"baseline is for provider {baseline.provider!r}, the run used {run.provider.name!r}"
        )
    if baseline.model != run.provider.model:
        warnings.append(
            f"baseline is for model {baseline.model!r}, the run used {run.provider.model!r}"
        )
    change = model_hash_change(baseline.model_sha256, run.provider.model_sha256, "baseline")
    if change:
        warnings.append(change)
    return warnings
