"""Two runs side by side (`evalctl compare RESULTS_A RESULTS_B`): each case's status change
and its latency and token deltas, and the summaries' deltas. Information, not a gate: it
exits 0 whatever changed. The transitions are the gate's (`baselines.changes`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from evalctl.baselines.changes import classify, model_hash_change
from evalctl.baselines.comparison import RateInterval
from evalctl.errors import ExitCode
from evalctl.results.models import CaseResult, CaseStatus, RunResult, Summary
from evalctl.results.summary import summarize

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
    # Both sides' pass counts where either side was sampled (run more than once): a flaky
    # status alone hides whether it passed 1 or 4 of 5.
    rate_a: RateInterval | None = None
    rate_b: RateInterval | None = None


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
    exit_code: ExitCode = ExitCode.OK

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
    counts = [c.pass_counts() if c else (0, 0) for c in (a, b)]
    sampled = any(runs > 1 for _, runs in counts)
    rate_a, rate_b = (RateInterval.of(c) if sampled and c[1] else None for c in counts)
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
        rate_a=rate_a,
        rate_b=rate_b,
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
