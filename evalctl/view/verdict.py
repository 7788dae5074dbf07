"""The verdict of a compare page: the older run made a baseline as `evalctl baseline --from`
makes it (`baselines.write.build_baseline`), the newer gated on it as `evalctl compare`
gates (`baselines.gate.compare_baseline`, with the rule, alpha and prices of evalctl.toml).

The runs come from their results files when the store's record of where a run was read
from still holds that run (the exact input `compare` would read); otherwise they are rebuilt
from the store's record of each case (status, samples, checks, latency, tokens), which holds
what the gate reads of a case but not per-check pass counts: the page says which it used.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalctl.chat import Usage
from evalctl.errors import EvalctlError
from evalctl.history import queries
from evalctl.results.models import (
    Attempt,
    CaseResult,
    CheckResult,
    Environment,
    ProviderInfo,
    RunResult,
    RunSettings,
)


def gate_pair(
    older: queries.RunDetail, newer: queries.RunDetail
) -> tuple[dict[str, Any] | None, str | None]:
    """(the verdict for the page, None) or (None, why there is none)."""
    from evalctl.baselines.gate import compare_baseline, rule_named
    from evalctl.baselines.write import build_baseline
    from evalctl.config import load_settings
    from evalctl.cost import usage_pricer

    settings = load_settings()
    before, before_exact = result_of(older)
    after, after_exact = result_of(newer)
    try:
        # min_pass_rate 0: the viewer shows the comparison even for a run a team would not
        # adopt as its baseline; the other refusals (an interrupted run, an infrastructure
        # error) stand, as they would for `baseline --from`.
        baseline = build_baseline(before, 0.0, settings.prices)
        rule = rule_named(settings.compare_gate, baseline, after, settings.compare_alpha)
        comparison = compare_baseline(
            baseline,
            after,
            rule=rule,
            cost_of=usage_pricer(after.provider.name, after.provider.model, settings.prices),
        )
    except EvalctlError as exc:
        return None, f"no verdict: {exc.message}"
    verdict = comparison.verdict
    return {
        "word": verdict.word,
        "tone": verdict.exit_code.tone,
        "exit_code": int(verdict.exit_code),
        "reasons": verdict.reasons,
        "gate": comparison.gate,
        "counts": comparison.counts_line(),
        "exact": before_exact and after_exact,
    }, None


def result_of(detail: queries.RunDetail) -> tuple[RunResult, bool]:
    """The run as `compare` reads it, and whether it came from its own results file."""
    source = detail.run.source
    if source:
        try:
            from evalctl.baselines.gating import read_results, run_of

            found = run_of(read_results(Path(source)))
        except (EvalctlError, OSError, ValueError):
            found = None
        if found is not None and found.run_id == detail.run.run_id:
            return found, True
    return rebuilt(detail), False


def rebuilt(detail: queries.RunDetail) -> RunResult:
    """The run rebuilt from the store's record of it."""
    r = detail.run
    try:
        settings = RunSettings.model_validate(detail.settings)
    except ValueError:
        settings = RunSettings(timeout_s=0.0)
    try:
        environment = Environment.model_validate(detail.environment or {})
    except ValueError:
        environment = Environment(
            host="", platform="", cpu="", cpu_count=0, ram_bytes=0, python="", evalctl=""
        )
    return RunResult(
        run_id=r.run_id,
        started_at=r.started_at,
        finished_at=r.finished_at,
        interrupted=r.interrupted,
        evalctl_version=environment.evalctl or "unknown",
        provider=ProviderInfo(name=r.provider, model=r.model),
        settings=settings,
        environment=environment,
        cases=[_case(c) for c in detail.cases],
    )


def _case(c: queries.CaseRecord) -> CaseResult:
    usage = Usage(input_tokens=c.tokens_in, output_tokens=c.tokens_out)
    attempts = []
    if c.status in ("pass", "fail", "flaky") and c.samples:
        # One attempt per sample, as the run's own: what the gate counts passes over.
        share = c.latency_ms
        attempts = [
            Attempt(status="pass" if i < c.passed else "fail", latency_ms=share)
            for i in range(c.samples)
        ]
    return CaseResult(
        key=c.key,
        suite=c.suite,
        id=c.case_id,
        status=c.status,
        attempts=attempts,
        pass_rate=c.pass_rate,
        checks=[
            CheckResult(
                name=ch.name,
                status=ch.status,
                expected=ch.expected,
                actual=ch.actual,
                message=ch.message,
            )
            for ch in c.checks
        ],
        latency_ms=c.latency_ms,
        usage=usage,
        output=c.output,
        error=c.error,
    )
