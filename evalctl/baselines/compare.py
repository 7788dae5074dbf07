"""Comparing a run to its baseline (the CI gate) and two runs to each other (a diff).

Status transitions, shared by both:

    before \\ after   pass         fail         flaky        error/skipped
    pass              unchanged    regression   regression   unscored
    fail              improvement  unchanged    improvement  unscored
    flaky             changed*     changed*     unchanged*   unscored

* A flaky case is judged on its pass rate when both sides carry pass counts (a baseline
recorded with --repeats, a run with attempts): the change is a regression when the current
Wilson 95% interval lies wholly below the baseline's (the rate really dropped), an
improvement when it lies wholly above, and otherwise `changed` (or `unchanged`), which does
not gate. Without counts a flaky baseline never gates: flakiness is the statement that
either outcome is expected, and gating on one noisy outcome would make CI flaky.
docs/flaky.md works through an example.

Check level (a baseline of schema version 2 records each check's outcome): inside a case
that failed in the baseline and fails now, a check that went pass -> fail is a *check
regression* and gates like a case regression; fail -> pass is a *check improvement*. A case
that regressed or improved as a whole lists its checks in its own entry instead. Checks of a
flaky case (either side) are not compared: they come from one repeat of a noisy case, and
the case's pass rate already judges it. Inside a case that passes on both sides (an `assert`
case with a threshold below 1 tolerates some failed checks), a check that went pass -> fail
is listed as a *check regression inside a passing case*: a note, not gating, since the
suite's author declared that verdict by the threshold. `n/a` (nothing to test) is neither
outcome: a change to or from n/a is not a regression.

Exit code of a baseline comparison: 1 on any regression (case or check) or orphaned case,
else 3 when a case could not be scored, else 0. A run diff is information, not a gate, and
exits 0.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from evalctl.baselines.model import Baseline, BaselineStatus
from evalctl.baselines.scope import in_scope
from evalctl.errors import ExitCode
from evalctl.results.models import (
    CaseResult,
    CaseStatus,
    CheckResult,
    CheckStatus,
    RunResult,
    Summary,
)
from evalctl.results.summary import summarize
from evalctl.results.text import plural
from evalctl.stats import dropped, rose, wilson_interval

Change = Literal["regression", "improvement", "changed", "unchanged", "unscored"]
Counts = tuple[int, int]  # (passed, runs)


def classify(
    before: CaseStatus,
    after: CaseStatus,
    before_counts: Counts | None = None,
    after_counts: Counts | None = None,
) -> Change:
    """The change from `before` to `after`; the counts, when both are known, decide for a
    flaky `before` whether its pass rate credibly moved (see the module docstring)."""
    if after in ("error", "skipped"):
        return "unscored"
    if before == "flaky" and _known(before_counts) and _known(after_counts):
        assert before_counts is not None and after_counts is not None
        if dropped(before_counts, after_counts):
            return "regression"
        if rose(before_counts, after_counts):
            return "improvement"
        return "unchanged" if after == "flaky" else "changed"
    if before == after:
        return "unchanged"
    if before == "pass":
        return "regression"
    if before == "fail":
        return "improvement"
    # flaky before, or (in a run diff) a case that was not scored before.
    return "changed"


def _known(counts: Counts | None) -> bool:
    return counts is not None and counts[1] > 0


# ---------------------------------------------------------------- baseline comparison


class RateInterval(BaseModel):
    """A pass count and its Wilson 95% interval."""

    passed: int
    runs: int
    low: float
    high: float

    @classmethod
    def of(cls, counts: Counts) -> RateInterval:
        interval = wilson_interval(*counts)
        return cls(
            passed=counts[0],
            runs=counts[1],
            low=round(interval.low, 4),
            high=round(interval.high, 4),
        )

    def describe(self) -> str:
        return f"{self.passed}/{self.runs} (95% CI {self.low:.0%}-{self.high:.0%})"


class CheckDetail(BaseModel):
    """A check's outcome in the run, with what it expected, found, and why."""

    name: str
    status: CheckStatus
    expected: Any = None
    actual: Any = None
    reason: str = ""

    @classmethod
    def of(cls, check: CheckResult) -> CheckDetail:
        return cls(
            name=check.name,
            status=check.status,
            expected=check.expected,
            actual=check.actual,
            reason=check.message,
        )


class CaseChange(BaseModel):
    key: str
    baseline: BaselineStatus
    current: CaseStatus
    # Names of the checks that failed now: the first thing a reader wants after the key.
    failed_checks: list[str] = []
    # The same checks with expected, actual and the reason.
    failures: list[CheckDetail] = []
    # For a flaky baseline: both pass rates and why the change does or does not gate.
    baseline_rate: RateInterval | None = None
    current_rate: RateInterval | None = None
    reason: str | None = None


class CheckChange(BaseModel):
    """One check whose outcome changed inside a case whose status did not."""

    key: str
    check: str
    baseline: CheckStatus
    current: CheckStatus
    case_status: CaseStatus
    expected: Any = None
    actual: Any = None
    reason: str = ""


class NewCase(BaseModel):
    key: str
    status: CaseStatus


class UnscoredCase(BaseModel):
    key: str
    status: CaseStatus
    reason: str
    in_baseline: bool


class Comparison(BaseModel):
    kind: Literal["baseline_comparison"] = "baseline_comparison"
    baseline_file: str | None = None
    results_file: str | None = None
    baseline_provider: str
    baseline_model: str
    run_id: str
    run_provider: str
    run_model: str
    regressions: list[CaseChange] = []
    improvements: list[CaseChange] = []
    # Check level, inside cases that failed in the baseline and fail now (module docstring).
    check_regressions: list[CheckChange] = []
    check_improvements: list[CheckChange] = []
    # Checks that went pass -> fail inside cases that pass on both sides (a threshold
    # below 1): a note, not gating.
    passing_check_regressions: list[CheckChange] = []
    # Flaky in the baseline, pass or fail now, with no credible change of pass rate (or no
    # counts to judge one): reported, not gating.
    flaky_changes: list[CaseChange] = []
    orphaned: list[str] = []
    new: list[NewCase] = []
    unscored: list[UnscoredCase] = []
    unchanged: list[str] = []
    # Baseline entries the run did not select (--suite/--case); neither orphaned nor checked.
    out_of_scope: int = 0
    warnings: list[str] = []
    # Rewrites the baseline from these results: accepts improvements, drops orphans.
    update_command: str
    exit_code: int

    def counts_line(self) -> str:
        """`1 regression · 2 check regressions · 0 orphaned · ...` for every renderer."""
        return " · ".join(
            [
                plural(len(self.regressions), "regression"),
                plural(len(self.check_regressions), "check regression"),
                f"{len(self.orphaned)} orphaned",
                f"{len(self.unscored)} unscored",
                plural(len(self.improvements), "improvement"),
                plural(len(self.check_improvements), "check improvement"),
                f"{len(self.new)} new",
                f"{len(self.unchanged)} unchanged",
            ]
        )

    @property
    def verdict(self) -> str:
        return {0: "OK", 1: "FAILED", 3: "UNSCORED"}.get(self.exit_code, str(self.exit_code))


def compare_baseline(
    baseline: Baseline,
    run: RunResult,
    *,
    results_path: Path | None = None,
    baseline_path: Path | None = None,
) -> Comparison:
    """Compare `run` to `baseline`. The paths are reported and spell out the update command."""
    results = {c.key: c for c in run.cases}
    regressions: list[CaseChange] = []
    improvements: list[CaseChange] = []
    # Check level, inside cases that failed in the baseline and fail now (module docstring).
    check_regressions: list[CheckChange] = []
    check_improvements: list[CheckChange] = []
    passing_check_regressions: list[CheckChange] = []
    flaky_changes: list[CaseChange] = []
    unscored: list[UnscoredCase] = []
    unchanged: list[str] = []
    orphaned: list[str] = []
    out_of_scope = 0

    for key, expected in sorted(baseline.baselines.items()):
        case = results.get(key)
        if case is None:
            if in_scope(run, key):
                orphaned.append(key)
            else:
                out_of_scope += 1
            continue
        counts = baseline.pass_counts.get(key)
        before_counts = counts.as_tuple() if counts else None
        after_counts = case.pass_counts()
        change = classify(expected, case.status, before_counts, after_counts)
        if change == "unscored":
            unscored.append(_unscored(case, in_baseline=True))
            continue
        entry = CaseChange(
            key=key,
            baseline=expected,
            current=case.status,
            failed_checks=_failed_checks(case),
            failures=[CheckDetail.of(c) for c in case.checks if c.failed],
        )
        if expected == "flaky":
            entry = _with_rates(entry, change, before_counts, after_counts)
        if change == "regression":
            regressions.append(entry)
        elif change == "improvement":
            improvements.append(entry)
        elif change == "changed":
            flaky_changes.append(entry)
        else:
            unchanged.append(key)
            if expected == "fail" and case.status == "fail":
                worse, better = _check_changes(key, baseline.checks.get(key, {}), case)
                check_regressions += worse
                check_improvements += better
            elif expected == "pass" and case.status == "pass":
                worse, _ = _check_changes(key, baseline.checks.get(key, {}), case)
                passing_check_regressions += worse

    new: list[NewCase] = []
    for key, case in sorted(results.items()):
        if key in baseline.baselines:
            continue
        if case.status == "error":
            # An error is unscored wherever it happens: it still means infrastructure failed.
            unscored.append(_unscored(case, in_baseline=False))
        else:
            new.append(NewCase(key=key, status=case.status))

    if regressions or check_regressions or orphaned:
        code = ExitCode.GATE_FAILED
    elif unscored:
        code = ExitCode.INFRA
    else:
        code = ExitCode.OK
    return Comparison(
        baseline_file=str(baseline_path) if baseline_path else None,
        results_file=str(results_path) if results_path else None,
        baseline_provider=baseline.provider,
        baseline_model=baseline.model,
        run_id=run.run_id,
        run_provider=run.provider.name,
        run_model=run.provider.model,
        regressions=regressions,
        improvements=improvements,
        check_regressions=check_regressions,
        check_improvements=check_improvements,
        passing_check_regressions=passing_check_regressions,
        flaky_changes=flaky_changes,
        orphaned=orphaned,
        new=new,
        unscored=unscored,
        unchanged=unchanged,
        out_of_scope=out_of_scope,
        warnings=_mismatch_warnings(baseline, run),
        update_command=update_command(results_path, baseline_path),
        exit_code=int(code),
    )


def _check_changes(
    key: str, before: dict[str, CheckStatus], case: CaseResult
) -> tuple[list[CheckChange], list[CheckChange]]:
    """Checks of one case that went pass -> fail (first) and fail -> pass (second)."""
    worse: list[CheckChange] = []
    better: list[CheckChange] = []
    for check in case.checks:
        was = before.get(check.name)
        if was is None or was == check.status or "n/a" in (was, check.status):
            continue
        change = CheckChange(
            key=key,
            check=check.name,
            baseline=was,
            current=check.status,
            case_status=case.status,
            expected=check.expected,
            actual=check.actual,
            reason=check.message,
        )
        (worse if check.status == "fail" else better).append(change)
    return worse, better


def _with_rates(
    entry: CaseChange, change: Change, before: Counts | None, after: Counts
) -> CaseChange:
    """Attach both pass rates to a flaky baseline's entry and say why it gates or not."""
    current = RateInterval.of(after) if _known(after) else None
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


def _failed_checks(case: CaseResult) -> list[str]:
    return [c.name for c in case.checks if c.failed]


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
    if baseline.schema_version < 2:
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


def model_hash_change(before: str | None, after: str | None, first: str) -> str | None:
    """Name a change of model weights between two files (both hashes known and different):
    the same model name can serve other weights, and that is worth saying out loud."""
    if before and after and before != after:
        return (
            f"model weights changed: the {first} was made with sha256 {before}, "
            f"these results with sha256 {after}"
        )
    return None


# ---------------------------------------------------------------- run diff

DiffChange = Literal[
    "regression", "improvement", "changed", "unchanged", "unscored", "added", "removed"
]


class RunRef(BaseModel):
    run_id: str
    provider: str
    model: str
    started_at: str
    # The weights' SHA256 where the provider reports one (the local model).
    model_sha256: str | None = None


class CaseDiff(BaseModel):
    key: str
    status_a: CaseStatus | None
    status_b: CaseStatus | None
    change: DiffChange
    latency_ms_a: float | None = None
    latency_ms_b: float | None = None
    latency_delta_ms: float | None = None
    tokens_a: int | None = None
    tokens_b: int | None = None
    tokens_delta: int | None = None


class SummaryDiff(BaseModel):
    a: Summary
    b: Summary
    pass_rate_delta: float | None
    latency_p50_delta_ms: float
    latency_p95_delta_ms: float
    latency_p99_delta_ms: float
    turns_mean_delta: float
    input_tokens_delta: int
    output_tokens_delta: int
    tokens_per_s_delta: float | None


class RunDiff(BaseModel):
    kind: Literal["run_diff"] = "run_diff"
    file_a: str | None = None
    file_b: str | None = None
    run_a: RunRef
    run_b: RunRef
    cases: list[CaseDiff]
    summary: SummaryDiff
    warnings: list[str] = Field(default_factory=list)
    exit_code: int = int(ExitCode.OK)

    def by_change(self, change: DiffChange) -> list[CaseDiff]:
        return [c for c in self.cases if c.change == change]


def compare_runs(
    a: RunResult, b: RunResult, *, path_a: Path | None = None, path_b: Path | None = None
) -> RunDiff:
    """Per-case status changes and latency/token deltas from run `a` to run `b`.

    Summaries are recomputed from the cases so both sides use this version's definitions.
    """
    cases_a = {c.key: c for c in a.cases}
    cases_b = {c.key: c for c in b.cases}
    diffs: list[CaseDiff] = []
    for key in sorted(cases_a.keys() | cases_b.keys()):
        diffs.append(_case_diff(key, cases_a.get(key), cases_b.get(key)))
    sa = summarize(a.cases, a.provider.name)
    sb = summarize(b.cases, b.provider.name)
    return RunDiff(
        file_a=str(path_a) if path_a else None,
        file_b=str(path_b) if path_b else None,
        run_a=_ref(a),
        run_b=_ref(b),
        cases=diffs,
        warnings=[
            w
            for w in [model_hash_change(a.provider.model_sha256, b.provider.model_sha256, "A run")]
            if w
        ],
        summary=SummaryDiff(
            a=sa,
            b=sb,
            pass_rate_delta=_opt_delta(sa.pass_rate, sb.pass_rate),
            latency_p50_delta_ms=sb.latency_ms.p50 - sa.latency_ms.p50,
            latency_p95_delta_ms=sb.latency_ms.p95 - sa.latency_ms.p95,
            latency_p99_delta_ms=sb.latency_ms.p99 - sa.latency_ms.p99,
            turns_mean_delta=sb.turns_mean - sa.turns_mean,
            input_tokens_delta=sb.usage.input_tokens - sa.usage.input_tokens,
            output_tokens_delta=sb.usage.output_tokens - sa.usage.output_tokens,
            tokens_per_s_delta=_opt_delta(sa.tokens_per_s, sb.tokens_per_s),
        ),
    )


def _case_diff(key: str, a: CaseResult | None, b: CaseResult | None) -> CaseDiff:
    change: DiffChange
    if a is None:
        change = "added"
    elif b is None:
        change = "removed"
    else:
        change = classify(a.status, b.status, a.pass_counts(), b.pass_counts())
    tokens_a = _tokens(a)
    tokens_b = _tokens(b)
    return CaseDiff(
        key=key,
        status_a=a.status if a else None,
        status_b=b.status if b else None,
        change=change,
        latency_ms_a=a.latency_ms if a else None,
        latency_ms_b=b.latency_ms if b else None,
        latency_delta_ms=b.latency_ms - a.latency_ms if a and b else None,
        tokens_a=tokens_a,
        tokens_b=tokens_b,
        tokens_delta=tokens_b - tokens_a if tokens_a is not None and tokens_b is not None else None,
    )


def _tokens(case: CaseResult | None) -> int | None:
    if case is None:
        return None
    return case.usage.input_tokens + case.usage.output_tokens


def _ref(run: RunResult) -> RunRef:
    return RunRef(
        run_id=run.run_id,
        provider=run.provider.name,
        model=run.provider.model,
        started_at=run.started_at,
        model_sha256=run.provider.model_sha256,
    )


def _opt_delta(a: float | None, b: float | None) -> float | None:
    return b - a if a is not None and b is not None else None
