"""`evalctl soak`: many requests on one warm local daemon, memory sampled, a leak verdict."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import BaseModel
from rich.markup import escape
from rich.table import Table

from evalctl.cli import history_store, options
from evalctl.cli.output import emit, stderr, stdout
from evalctl.errors import BadInputError, Ended, ExitCode, Outcome
from evalctl.userfiles import MAX_TIMEOUT_S

if TYPE_CHECKING:
    from evalctl.stability.soak import SoakProgress

DEFAULT_SUITE = "asset-triage"


class SoakFilesOut(BaseModel):
    out_dir: str
    json_path: str
    toml_path: str
    chart_path: str
    html_path: str


class SoakOutput(BaseModel):
    files: SoakFilesOut
    # The whole soak result, as written to soak.json.
    result: dict[str, object]


def _render(out: SoakOutput) -> None:
    from evalctl.stability.describe import mib, pct, per_request, signed_mib
    from evalctl.stability.models import SoakResult

    result = SoakResult.model_validate(out.result)
    v = result.verdict
    warmup = result.settings.warmup
    table = Table(
        title=f"soak {result.soak_id} · {result.environment.model_name} · pid {result.daemon.pid}",
        title_justify="left",
    )
    for column in ("request #", "RSS", "USS", "anon", "Δ anon vs baseline", ""):
        table.add_column(column, justify="right" if column else "left")
    for s in result.samples:
        delta = "-" if v.baseline_bytes is None else signed_mib(s.anon_bytes - v.baseline_bytes)
        table.add_row(
            str(s.request),
            mib(s.rss_bytes),
            mib(s.uss_bytes),
            mib(s.anon_bytes),
            delta,
            "[dim]warm-up[/]" if s.request < warmup else "",
            style="dim" if s.request < warmup else None,
        )
    stdout.print(table)
    colour = {"no leak": "green", "leak": "red"}.get(v.verdict, "yellow")
    stdout.print(
        f"[bold {colour}]{v.verdict}[/] · anon growth after warm-up {pct(v.growth_pct)} · "
        f"slope {per_request(v.slope_bytes_per_request)} · "
        f"R² {'-' if v.r_squared is None else f'{v.r_squared:.2f}'} · "
        f"second half {per_request(v.late_slope_bytes_per_request)} · "
        f"threshold {v.threshold_pct:g}%"
    )
    stdout.print(escape(v.reason), soft_wrap=True, style="dim")
    if result.error:
        stdout.print(f"[yellow]stopped early:[/] {escape(result.error)}", soft_wrap=True)
    for label, path in (
        ("results", out.files.json_path),
        ("chart", out.files.chart_path),
        ("report", out.files.html_path),
    ):
        stdout.print(escape(f"{label}: {path}"), soft_wrap=True)


def _progress(event: SoakProgress) -> None:
    from evalctl.stability.describe import mib

    memory = f" · anon {mib(event.sample.anon_bytes)}" if event.sample else ""
    error = f" · error: {event.error}" if event.error else ""
    stderr.print(
        escape(
            f"request {event.request}/{event.total} · {event.case} · "
            f"{event.latency_ms:.0f} ms{memory}{error}"
        ),
        style="dim",
        soft_wrap=True,
    )


def soak(
    requests: Annotated[
        int,
        typer.Option("--requests", "-n", min=1, help="Requests to send to the one warm daemon."),
    ] = 25,
    suite: Annotated[
        list[str] | None,
        typer.Option(
            "--suite", "-s", help=f"Suites whose cases are cycled (default: {DEFAULT_SUITE})."
        ),
    ] = None,
    case: Annotated[list[str] | None, options.CASE] = None,
    cases: Annotated[list[Path] | None, options.CASES_PATH] = None,
    sample_every: Annotated[
        int, typer.Option("--sample-every", min=1, help="Sample memory after every N-th request.")
    ] = 1,
    cycle: Annotated[
        int,
        typer.Option(
            "--cycle", min=0, help="Cycle through the first N selected cases (0: all of them)."
        ),
    ] = 5,
    warmup: Annotated[
        int | None,
        typer.Option(
            "--warmup",
            min=0,
            help="Requests before the verdict's baseline (default: one pass over the cycle).",
        ),
    ] = None,
    threshold: Annotated[
        float,
        typer.Option(
            "--threshold",
            help="Anonymous-memory growth (percent) above which steady growth is a leak.",
        ),
    ] = 5.0,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout",
            max=MAX_TIMEOUT_S,
            help="Per-request timeout in seconds (default: the case's).",
        ),
    ] = None,
    model: Annotated[str | None, options.MODEL] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", "-o", help="Directory for soak.json/.toml, memory.svg, soak.html."),
    ] = None,
    store: history_store.StoreOpt = None,
    no_store: history_store.NoStoreOpt = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> Outcome | None:
    """Soak the local daemon: N requests on one warm daemon, its memory sampled.

    Requests cycle through the first --cycle cases of the selection (default: 5 of
    asset-triage), the exact first-turn requests a run sends. Memory (RSS, USS and
    anonymous) is sampled before the first request, at the end of the warm-up (by default
    one pass over the cycle) and after every --sample-every requests. The verdict is judged
    on anonymous memory: a leak is growth above --threshold after the warm-up that is also
    steady (a least-squares fit with R² >= 0.5 that still rises in the window's second
    half); runbooks/soak.md has the exact rule.

    Exit 0 no leak, 1 leak, 3 the daemon died or could not start, 130 interrupted.
    """
    from evalctl.cases.loader import load_suites
    from evalctl.reports.soak_page import memory_chart_svg, soak_page
    from evalctl.results.io import write_text_atomic
    from evalctl.stability.requests import first_turn_calls
    from evalctl.stability.soak import SoakPlan, cycle_of, new_soak_id, run_soak, write_soak

    if timeout is not None and timeout <= 0:
        raise BadInputError("must be positive", field="--timeout")
    if warmup is not None:
        # Refuse an impossible plan before loading anything.
        SoakPlan(requests, warmup, sample_every, threshold).check()
    settings = options.settings_from_env()
    names = suite or ([] if cases else [DEFAULT_SUITE])
    suites = load_suites(
        cases or None, settings.cases_dir, suite_names=names, case_glob=options.case_globs(case)
    )
    calls = cycle_of(first_turn_calls(suites, settings, timeout), cycle)
    if not calls:
        raise BadInputError("no cases matched", hint="check --suite/--case")
    plan = SoakPlan(
        requests=requests,
        warmup=len(calls) if warmup is None else warmup,
        sample_every=sample_every,
        threshold_pct=threshold,
    )
    plan.check()
    provider = options.stability_provider(settings, model)
    soak_id = new_soak_id()
    out_dir = out or settings.results_dir / soak_id
    try:
        result = run_soak(
            provider,
            plan,
            calls,
            suites=[s.name for s in suites],
            case_glob=options.case_globs(case),
            timeout_s=timeout,
            progress=None if as_json else _progress,
            soak_id=soak_id,
        )
    finally:
        provider.close()
    files = write_soak(result, out_dir)
    write_text_atomic(files.chart, memory_chart_svg(result))
    write_text_atomic(files.html, soak_page(result))
    emit(
        SoakOutput(
            files=SoakFilesOut(
                out_dir=str(out_dir),
                json_path=str(files.json),
                toml_path=str(files.toml),
                chart_path=str(files.chart),
                html_path=str(files.html),
            ),
            result=result.model_dump(mode="json"),
        ),
        as_json,
        _render,
    )
    ended = _ended(result.verdict.verdict, result.interrupted, bool(result.error))
    history_store.record_verdict(
        settings, options.environ(), store, no_store, kind="soak", subject=soak_id,
        outcome=result.verdict.verdict, exit_code=int(ended.exit_code) if ended else 0,
        body={"out_dir": str(out_dir), **result.model_dump(mode="json")},
    )  # fmt: skip
    return ended


def _ended(verdict: str, interrupted: bool, error: bool) -> Outcome | None:
    if verdict == "leak":
        return Ended(ExitCode.GATE_FAILED)
    if interrupted:
        return Ended(ExitCode.INTERRUPTED)
    if error or verdict == "inconclusive":
        return Ended(ExitCode.INFRA)
    return None


def register(app: typer.Typer) -> None:
    app.command("soak")(soak)
