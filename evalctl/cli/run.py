"""`evalctl run`: run golden cases against a provider and write versioned results."""

from __future__ import annotations

from pathlib import Path

import typer
from pydantic import BaseModel
from rich.table import Table

from evalctl.cli import options
from evalctl.cli.output import emit, stdout
from evalctl.errors import ExitCode
from evalctl.results.models import CaseStatus, Summary


class CaseLine(BaseModel):
    key: str
    status: CaseStatus
    failed_checks: list[str]
    latency_ms: float
    error: str | None = None
    skip_reason: str | None = None


class RunOutput(BaseModel):
    run_id: str
    provider: str
    model: str
    results_path: str
    interrupted: bool
    summary: Summary
    cases: list[CaseLine]


def _fmt_rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def render(out: RunOutput) -> None:
    table = Table(title=f"{out.run_id} · {out.provider} · {out.model}", title_justify="left")
    for column in ("case", "status", "latency", "detail"):
        table.add_column(column, overflow="fold")
    colours = {"pass": "green", "fail": "red", "error": "magenta", "flaky": "yellow"}
    for line in out.cases:
        detail = line.error or line.skip_reason or ", ".join(line.failed_checks)
        colour = colours.get(line.status, "dim")
        table.add_row(line.key, f"[{colour}]{line.status}[/]", f"{line.latency_ms:.0f} ms", detail)
    stdout.print(table)
    s = out.summary
    stdout.print(
        f"[bold]{s.passed}/{s.total} passed[/] ({_fmt_rate(s.pass_rate)} of scored) · "
        f"{s.failed} failed · {s.errors} errors · {s.skipped} skipped · "
        f"first-try {_fmt_rate(s.first_try_rate)} · "
        f"p50 {s.latency_ms.p50:.0f} ms · p95 {s.latency_ms.p95:.0f} ms · "
        f"tokens in/out {s.usage.input_tokens}/{s.usage.output_tokens}"
    )
    stdout.print(f"results: {out.results_path}")


def run(
    provider: str | None = options.PROVIDER,
    model: str | None = options.MODEL,
    suite: list[str] | None = options.SUITE,
    case: str | None = options.CASE,
    script: Path | None = options.SCRIPT,
    cases: list[Path] | None = options.CASES_PATH,
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Directory for results.json/.toml (default: results/<run-id>)."
    ),
    repeats: int = typer.Option(1, "--repeats", min=1, help="Run each case N times."),
    concurrency: int = typer.Option(
        1, "--concurrency", "-j", min=1, help="Parallel cases (cloud providers only)."
    ),
    timeout: float | None = typer.Option(None, "--timeout", help="Per-case timeout in seconds."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show a progress bar."),
    as_json: bool = options.JSON,
) -> None:
    """Run golden cases against a provider and write versioned results.

    Exits 0 when every case was scored, whatever the scores (failures are data; `evalctl
    compare` gates), 3 when a case ended in an infrastructure error, 130 when interrupted
    (the cases finished so far are kept).
    """
    request = options.build_request(
        provider=provider,
        model=model,
        suite=suite,
        case=case,
        script=script,
        cases=cases,
        out=out,
        repeats=repeats,
        concurrency=concurrency,
        timeout=timeout,
        show_progress=progress and not as_json,
    )
    # Imported on use so `evalctl --help` does not load the runner.
    from evalctl.runner.execute import execute_run

    outcome = execute_run(request, options.settings_from_env(), options.environ())
    result = outcome.result
    output = RunOutput(
        run_id=result.run_id,
        provider=result.provider.name,
        model=result.provider.model,
        results_path=str(outcome.results_path),
        interrupted=result.interrupted,
        summary=result.summary,
        cases=[
            CaseLine(
                key=c.key,
                status=c.status,
                failed_checks=[ch.name for ch in c.checks if not ch.passed],
                latency_ms=c.latency_ms,
                error=c.error,
                skip_reason=c.skip_reason,
            )
            for c in result.cases
        ],
    )
    emit(output, as_json, render)
    if result.summary.errors:
        raise typer.Exit(int(ExitCode.INFRA))


def register(app: typer.Typer) -> None:
    app.command("run")(run)
