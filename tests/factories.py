"""Small builders for RunResult / CaseResult fixtures, so tests state only what they vary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evalctl.baselines.model import Baseline, BaselineStatus
from evalctl.chat import Usage
from evalctl.results.models import (
    Attempt,
    CaseResult,
    CaseStatus,
    CheckResult,
    Environment,
    ProviderInfo,
    RunResult,
    RunSettings,
)
from evalctl.results.summary import summarize


def case(
    key: str,
    status: CaseStatus = "pass",
    *,
    latency_ms: float = 100.0,
    input_tokens: int = 0,
    output_tokens: int = 0,
    turns: int = 1,
    first_try: bool | None = None,
    tokens_per_s: float | None = None,
    failed_checks: tuple[str, ...] = (),
    error: str | None = None,
    skip_reason: str | None = None,
) -> CaseResult:
    suite, _, case_id = key.partition("/")
    checks = [CheckResult(name=name, passed=False) for name in failed_checks]
    if status == "pass":
        checks.append(CheckResult(name="answer", passed=True))
    usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    # A scored case has its one scored attempt, as the runner writes it (and as a file
    # without attempts is upgraded when read, evalctl.results.versions).
    attempts = (
        [Attempt(status=status, latency_ms=latency_ms, turns=turns, usage=usage)]
        if status in ("pass", "fail", "flaky")
        else []
    )
    return CaseResult(
        key=key,
        suite=suite,
        id=case_id,
        status=status,
        checks=checks,
        attempts=attempts,
        latency_ms=latency_ms,
        usage=usage,
        turns=turns,
        first_try=status == "pass" if first_try is None else first_try,
        tokens_per_s=tokens_per_s,
        error=error if error is not None else ("connection refused" if status == "error" else None),
        skip_reason=skip_reason,
    )


def run(
    cases: list[CaseResult],
    *,
    provider: str = "scripted",
    model: str = "script",
    model_sha256: str | None = None,
    run_id: str = "20260101-000000-scripted-abcd",
    suite_filter: list[str] | None = None,
    case_glob: str | None = None,
    interrupted: bool = False,
) -> RunResult:
    return RunResult(
        run_id=run_id,
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:01:00+00:00",
        interrupted=interrupted,
        evalctl_version="0.1.0",
        provider=ProviderInfo(name=provider, model=model, model_sha256=model_sha256),
        settings=RunSettings(
            timeout_s=60.0,
            suites=sorted({c.suite for c in cases}),
            suite_filter=suite_filter or [],
            case_glob=case_glob,
        ),
        environment=Environment(
            host="test",
            platform="linux",
            cpu="test-cpu",
            cpu_count=2,
            ram_bytes=1 << 30,
            python="3.11",
            evalctl="0.1.0",
        ),
        cases=cases,
        summary=summarize(cases, provider),
    )


def statuses(run_: RunResult) -> dict[str, CaseStatus]:
    return {c.key: c.status for c in run_.cases}


def baseline(
    entries: dict[str, BaselineStatus], *, provider: str = "scripted", model: str = "script"
) -> Baseline:
    return Baseline(provider=provider, model=model, baselines=entries)


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))
    return path
