"""`evalctl run`: run golden cases against a provider and write versioned results."""

from __future__ import annotations

import functools
import sys
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel
from rich.markup import escape
from rich.table import Table

from evalctl.cases.select import parse_meta
from evalctl.cli import confirm_option, history_store, options
from evalctl.cli.help_format import in_panel
from evalctl.cli.output import emit, stdout
from evalctl.cli.run_matrix import matrix_plan, matrix_reports, resumed_cell, run_matrix
from evalctl.errors import BadInputError, Ended, ExitCode, Outcome
from evalctl.results.models import CaseResult, CaseStatus, RunResult, Summary
from evalctl.results.text import STATUS_STYLE, plural
from evalctl.runner.api import RunRequest
from evalctl.secrets import redact
from evalctl.userfiles import MAX_SAMPLES, MAX_TIMEOUT_S

# `--markdown -` means standard output, as in `evalctl report`.
MARKDOWN_STDOUT = Path("-")
# Past this many cases the table lists only the cases that did not pass (at most this many):
# rendering 1,000 rows took seconds of a large run's CPU, and no one reads them (issue 41).
TABLE_ROWS = 50


class CaseLine(BaseModel):
    key: str
    status: CaseStatus
    failed_checks: list[str]
    latency_ms: float
    error: str | None = None
    skip_reason: str | None = None
    # With --repeats: "passed/runs (95% CI low-high)".
    repeats: str | None = None
    # With --restart-per-case: the fresh daemon that served the case.
    daemon_pid: int | None = None


class RunOutput(BaseModel):
    run_id: str
    provider: str
    model: str
    results_path: str
    interrupted: bool
    summary: Summary
    cases: list[CaseLine]
    resumed: bool = False
    shard: str | None = None  # "i/n"
    junit_path: str | None = None
    markdown_path: str | None = None
    # A resumed matrix cell: the matrix index it was put back into.
    matrix_path: str | None = None


def _fmt_rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def _shown(cases: list[CaseLine], verbose: bool) -> tuple[list[CaseLine], str | None]:
    """The table's rows, and what the table leaves out, said in a line (None: nothing)."""
    if verbose or len(cases) <= TABLE_ROWS:
        return cases, None
    others = [line for line in cases if line.status != "pass"]
    shown = others[:TABLE_ROWS]
    passed = len(cases) - len(others)
    more = len(others) - len(shown)
    return shown, (
        f"not listed: {passed} passing of {len(cases)} cases"
        + (f", and {more} more that did not pass" if more else "")
        + " (--verbose lists every case; `evalctl report RESULTS` tabulates them)"
    )


def render(out: RunOutput, *, verbose: bool = False) -> None:
    table = Table(title=f"{out.run_id} · {out.provider} · {out.model}", title_justify="left")
    rows, left_out = _shown(out.cases, verbose)
    pids = any(line.daemon_pid is not None for line in rows)
    for column in ("case", "status", "latency", *(("daemon pid",) if pids else ()), "detail"):
        table.add_column(column, overflow="fold")
    for line in rows:
        detail = line.error or line.skip_reason or ", ".join(line.failed_checks)
        if line.repeats:
            detail = f"{line.repeats}; {detail}" if detail else line.repeats
        colour = STATUS_STYLE.get(line.status, "dim")
        pid = (str(line.daemon_pid or "-"),) if pids else ()
        # An error's words are text, not Rich markup: "[judge] provider" must stay; and they
        # are redacted as every file evalctl writes is.
        table.add_row(
            escape(line.key),
            f"[{colour}]{line.status}[/]",
            f"{line.latency_ms:.0f} ms",
            *pid,
            escape(redact(detail)),
        )
    if rows:
        stdout.print(table)
    if left_out is not None:
        stdout.print(left_out)
    s = out.summary
    stdout.print(
        f"[bold]{s.passed}/{s.total} passed[/] ({_fmt_rate(s.pass_rate)} of scored) · "
        f"{s.failed} failed · {plural(s.errors, 'error')} · {s.skipped} skipped · "
        f"first-try {_fmt_rate(s.first_try_rate)} · "
        f"p50 {s.latency_ms.p50:.0f} ms · p95 {s.latency_ms.p95:.0f} ms · "
        f"tokens in/out {s.usage.input_tokens}/{s.usage.output_tokens}"
    )
    stdout.print(f"results: {out.results_path}")
    for label, path in (
        ("junit", out.junit_path),
        ("markdown", out.markdown_path),
        ("matrix", out.matrix_path),
    ):
        if path:
            stdout.print(f"{label}: {path}")


# `evalctl run --help` lists its options in these panels (--json and --help stay in Options).
_SELECTION = "Selection"
_PROVIDER = "Provider"
_SAMPLING = "Sampling"
_GATE = "Gate and baseline"
_OUTPUT = "Output and reports"
_DAEMON = "Local daemon"
_LIMITS = "Limits and safety"


def run(
    provider: Annotated[list[str] | None, in_panel(options.PROVIDER, _PROVIDER)] = None,
    model: Annotated[list[str] | None, in_panel(options.MODEL, _PROVIDER)] = None,
    suite: Annotated[list[str] | None, in_panel(options.SUITE, _SELECTION)] = None,
    case: Annotated[list[str] | None, in_panel(options.CASE, _SELECTION)] = None,
    feature: Annotated[list[str] | None, in_panel(options.FEATURE, _SELECTION)] = None,
    meta: Annotated[list[str] | None, in_panel(options.META, _SELECTION)] = None,
    limit: Annotated[int | None, in_panel(options.LIMIT, _SELECTION)] = None,
    script: Annotated[Path | None, in_panel(options.SCRIPT, _PROVIDER)] = None,
    cases: Annotated[list[Path] | None, in_panel(options.CASES_PATH, _SELECTION)] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Directory for results.json/.toml (default: results/<run-id>).",
            rich_help_panel=_OUTPUT,
        ),
    ] = None,
    repeats: Annotated[
        int | None,
        typer.Option(
            "--repeats",
            min=1,
            max=MAX_SAMPLES,
            help="Run each case N times; pass rate with a 95% interval, flaky when some pass.",
            rich_help_panel=_SAMPLING,
        ),
    ] = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            "-j",
            min=1,
            help="Cases sent at once (default 1). The local daemon serves one case per slot, "
            "each slot on its share of the threads, as many slots as -j (or local_parallel).",
            rich_help_panel=_LIMITS,
        ),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option("--timeout", help="Per-case timeout in seconds.", rich_help_panel=_LIMITS),
    ] = None,
    progress: Annotated[
        bool,
        typer.Option(
            "--progress/--no-progress", help="Show a progress bar.", rich_help_panel=_OUTPUT
        ),
    ] = True,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help=f"List every case in the table (past {TABLE_ROWS} cases it lists only those "
            "that did not pass, and counts the rest).",
            rich_help_panel=_OUTPUT,
        ),
    ] = False,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            metavar="RUN_DIR",
            help="Continue an interrupted or killed run: run only the cases its journal lacks.",
            rich_help_panel=_SELECTION,
        ),
    ] = None,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="I/N",
            help="Run only shard I of N (see `evalctl merge`).",
            rich_help_panel=_SELECTION,
        ),
    ] = None,
    junit: Annotated[
        Path | None,
        typer.Option("--junit", help="Also write JUnit XML here.", rich_help_panel=_OUTPUT),
    ] = None,
    markdown: Annotated[
        Path | None,
        typer.Option(
            "--markdown",
            help="Also write a Markdown summary here ('-': standard output), and to "
            "$GITHUB_STEP_SUMMARY when set.",
            rich_help_panel=_OUTPUT,
        ),
    ] = None,
    restart_per_case: Annotated[
        bool,
        typer.Option(
            "--restart-per-case",
            help="Full benchmark: a fresh local daemon for every case (pid, start and duration "
            "recorded per case).",
            rich_help_panel=_DAEMON,
        ),
    ] = False,
    cooldown: Annotated[
        float | None,
        typer.Option(
            "--cooldown",
            min=0,
            metavar="SECONDS",
            help=(
                "With --restart-per-case: pause between stopping one daemon and starting the next."
            ),
            rich_help_panel=_DAEMON,
        ),
    ] = None,
    judge_cache: Annotated[
        bool,
        typer.Option(
            "--judge-cache/--no-judge-cache",
            help="Reuse `judge` verdicts cached under EVALCTL_HOME (--no-judge-cache asks again).",
            rich_help_panel=_PROVIDER,
        ),
    ] = True,
    temperature: Annotated[float | None, in_panel(options.TEMPERATURE, _SAMPLING)] = None,
    seed: Annotated[int | None, in_panel(options.SEED, _SAMPLING)] = None,
    samples: Annotated[int | None, in_panel(options.SAMPLES, _SAMPLING)] = None,
    baseline: Annotated[Path | None, in_panel(confirm_option.BASELINE, _GATE)] = None,
    confirm: Annotated[str | None, in_panel(confirm_option.CONFIRM, _GATE)] = None,
    no_tools_exec: Annotated[bool, in_panel(options.NO_TOOLS_EXEC, _LIMITS)] = False,
    allow_outside_paths: Annotated[bool, in_panel(options.ALLOW_OUTSIDE_PATHS, _LIMITS)] = False,
    store: Annotated[str | None, in_panel(history_store.STORE, _OUTPUT)] = None,
    no_store: Annotated[bool, in_panel(history_store.NO_STORE, _OUTPUT)] = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> Outcome | None:
    """Run golden cases against a provider and write versioned results.

    Exits 0 when every case was scored, whatever the scores (failures are data; `evalctl
    compare` gates), 3 when a case ended in an infrastructure error, 130 when interrupted
    (the cases finished so far are kept).

    - --resume RUN_DIR continues a run that was interrupted or killed: only the cases
      missing from its journal run, with its original selection; contradicting flags exit 2.
    - --shard I/N runs one part of the selection; `evalctl merge` joins the parts.
    - --limit N runs the first N cases of each suite, after the other filters.
    - --restart-per-case runs the full-benchmark procedure (runbooks/full-benchmark.md).
    - --temperature and --seed override every suite's and case's sampling.
    - --samples K runs each case K times as K seeded samples (not with --repeats or --seed).
    - --no-tools-exec refuses suites whose tools run code (docs/security.md).
    - --baseline B re-samples each case whose pass rate dropped below B's, --confirm R times
      (default auto, 0: off), so `evalctl compare B RESULTS` can tell a broken case from
      noise.
    - --allow-outside-paths lets suites name files outside their project (docs/security.md).

    Each run (each matrix cell's too) is recorded in the run store (docs/history.md):
    --store URL chooses it, --no-store records nothing.

    Several --provider or --model values, or a \\[matrix] in evalctl.toml when neither is
    given, run a matrix: one run per provider x model x prompt variant, each in
    <out>/<cell-id>/, with matrix.json, matrix.html and matrix.md beside them. --model
    PROVIDER:MODEL applies to that provider only; the flags replace the matrix's providers
    and models, never its prompt variants. `evalctl compare BASELINES_DIR MATRIX_DIR` gates
    each cell on its own baseline.
    """
    from evalctl.sharding import parse_shard

    options.path_rule(allow_outside_paths, no_tools_exec)
    if timeout is not None and not 0 < timeout <= MAX_TIMEOUT_S:
        # A case that times out at once would end in error: exit 3, for what is bad usage;
        # past the range a wait overflows.
        raise BadInputError(
            f"{timeout:g} is not a number of seconds above 0 and at most {MAX_TIMEOUT_S:g}",
            field="--timeout",
        )
    exclusive = (resume, shard, junit, markdown, restart_per_case)
    plan = matrix_plan(
        provider or [], model or [], exclusive, cases, code_may_run=not no_tools_exec
    )
    # A matrix's cells name their own provider and model.
    provider_name = provider[0] if provider and plan is None else None
    model_name = model[0] if model and plan is None else None

    if markdown == MARKDOWN_STDOUT and as_json:
        raise BadInputError("cannot print Markdown and --json together", field="--markdown")
    if cooldown is not None and not restart_per_case and resume is None:
        raise BadInputError("only applies with --restart-per-case", field="--cooldown")
    if samples is not None and repeats is not None:
        raise BadInputError(
            "cannot be combined with --repeats: K samples are K repeats, each with its own seed",
            field="--samples",
        )

    shard_spec = parse_shard(shard) if shard is not None else None
    if resume is not None and out is not None:
        raise BadInputError(
            "cannot be combined with --resume: the run keeps its directory", field="--out"
        )
    request = run_request(
        provider=provider_name,
        model=model_name,
        suite=suite,
        case=case,
        feature=feature,
        meta=meta,
        limit=limit,
        script=script,
        cases=cases,
        out=out,
        repeats=repeats,
        concurrency=concurrency,
        timeout=timeout,
        show_progress=progress and not as_json,
        resume=resume,
        shard=shard_spec,
        restart_per_case=restart_per_case,
        cooldown=cooldown,
        judge_cache=judge_cache,
        temperature=temperature,
        seed=seed,
        samples=samples,
        baseline=baseline,
        confirm=confirm,
        no_tools_exec=no_tools_exec,
    )
    settings = options.settings_from_env(request.paths, code_may_run=request.tools_exec)
    request = history_store.with_store(request, settings, options.environ(), store, no_store)
    if plan is not None:
        return run_matrix(request, plan[0], as_json)
    if request.provider == "all":
        return _run_all_providers(request, as_json, exclusive=exclusive)
    return _run_one(request, shard_spec, junit, markdown, as_json, verbose=verbose)


def _run_one(
    request: RunRequest,
    shard_spec: tuple[int, int] | None,
    junit: Path | None,
    markdown: Path | None,
    as_json: bool,
    *,
    verbose: bool = False,
) -> Outcome | None:
    """One provider's run of `request`, its renderings, and what the command prints."""
    # Imported on use so `evalctl --help` does not load the runner.
    from evalctl.runner.execute import execute_run

    outcome = execute_run(
        request,
        options.settings_from_env(request.paths, code_may_run=request.tools_exec),
        options.environ(),
    )
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
                failed_checks=[ch.name for ch in c.checks if ch.failed],
                latency_ms=c.latency_ms,
                error=c.error,
                skip_reason=c.skip_reason,
                repeats=_repeats(c) if result.settings.repeats > 1 else None,
                daemon_pid=c.daemon.pid if c.daemon else None,
            )
            for c in result.cases
        ],
        resumed=request.resume,
        shard=f"{shard_spec[0]}/{shard_spec[1]}" if shard_spec else None,
    )
    output.junit_path, output.markdown_path, markdown_text = _write_reports(result, junit, markdown)
    if request.resume and request.out_dir is not None:
        matrix_path = resumed_cell(request.out_dir, outcome.results_path)
        output.matrix_path = str(matrix_path) if matrix_path else None
    emit(output, as_json, functools.partial(render, verbose=verbose))
    if markdown == MARKDOWN_STDOUT and markdown_text is not None:
        # `--markdown -` prints it after the table, as `report --markdown -` does (it once
        # wrote a file named "-").
        sys.stdout.write(redact(markdown_text) + "\n")
        sys.stdout.flush()
    return Ended(ExitCode.INFRA) if result.summary.errors else None


class ProviderRunLine(BaseModel):
    provider: str
    ran: bool
    skip_reason: str | None = None
    results_path: str | None = None
    summary: Summary | None = None


class AllProvidersOutput(BaseModel):
    runs: list[ProviderRunLine]
    # The matrix of one cell per provider (`evalctl compare` gates it like any matrix).
    matrix_path: str | None = None
    html_path: str | None = None
    markdown_path: str | None = None


def _render_all(out: AllProvidersOutput) -> None:
    table = Table(title="every provider", title_justify="left")
    for column in ("provider", "status", "passed", "errors", "detail"):
        table.add_column(column, overflow="fold")
    for line in out.runs:
        if line.summary is None:
            table.add_row(
                line.provider, "[dim]skipped[/]", "-", "-", escape(line.skip_reason or "")
            )
            continue
        s = line.summary
        table.add_row(
            line.provider,
            "[green]ran[/]",
            f"{s.passed}/{s.total}",
            str(s.errors),
            line.results_path or "",
        )
    stdout.print(table)
    for label, path in (
        ("matrix", out.matrix_path),
        ("report", out.html_path),
        ("markdown", out.markdown_path),
    ):
        if path:
            stdout.print(f"{label}: {path}")


def _run_all_providers(
    request: RunRequest, as_json: bool, exclusive: tuple[object, ...]
) -> Outcome | None:
    """`--provider all`: one run per real provider; the unavailable ones are skipped."""
    if any(exclusive):
        raise BadInputError(
            "--provider all cannot be combined with --resume, --shard, --junit, --markdown "
            "or --restart-per-case: run one provider at a time for those",
            field="--provider",
        )
    from evalctl.runner.all_providers import execute_all

    matrix = execute_all(
        request,
        options.settings_from_env(request.paths, code_may_run=request.tools_exec),
        options.environ(),
    )
    html, markdown = matrix_reports(matrix)
    output = AllProvidersOutput(
        runs=[
            ProviderRunLine(
                provider=r.cell.provider,
                ran=r.outcome is not None,
                skip_reason=r.skip_reason,
                results_path=str(r.outcome.results_path) if r.outcome else None,
                summary=r.outcome.result.summary if r.outcome else None,
            )
            for r in matrix.cells
        ],
        matrix_path=str(matrix.index_path),
        html_path=str(html),
        markdown_path=str(markdown),
    )
    emit(output, as_json, _render_all)
    failed = any(r.outcome and r.outcome.result.summary.errors for r in matrix.cells)
    return Ended(ExitCode.INFRA) if failed else None


def run_request(
    *,
    provider: str | None,
    model: str | None,
    suite: list[str] | None,
    case: list[str] | None,
    feature: list[str] | None,
    meta: list[str] | None,
    limit: int | None,
    script: Path | None,
    cases: list[Path] | None,
    out: Path | None,
    repeats: int | None,
    concurrency: int | None,
    timeout: float | None,
    show_progress: bool,
    resume: Path | None,
    shard: tuple[int, int] | None,
    restart_per_case: bool,
    cooldown: float | None,
    judge_cache: bool,
    temperature: float | None,
    seed: int | None,
    samples: int | None,
    baseline: Path | None,
    confirm: str | None,
    no_tools_exec: bool,
) -> RunRequest:
    """`evalctl run`'s request, complete, from its flags: a new run's, or with --resume the
    one continuing the run in that directory, which keeps the selection, sampling and
    procedure it started with (from its manifest) and refuses flags that contradict them."""
    if resume is not None:
        from evalctl.runner.resume import Overrides, resume_point, resumed_request

        given = Overrides(
            provider=provider,
            model=model,
            script=script,
            paths=cases,
            suites=suite,
            case_glob=options.case_globs(case),
            features=feature or None,
            meta=parse_meta(meta) or None,
            limit=limit,
            repeats=repeats,
            timeout_s=timeout,
            shard=shard,
            temperature=temperature,
            seed=seed,
            samples=samples,
            restart_per_case=restart_per_case,
            cooldown_s=cooldown,
        )
        manifest = resume_point(resume, given)
        return resumed_request(
            resume,
            manifest,
            given,
            concurrency=concurrency,
            show_progress=show_progress,
            judge_cache=judge_cache,
            tools_exec=not no_tools_exec,
            confirm=confirm_option.resumed_plan(
                manifest, baseline, confirm, options.read_only_settings
            ),
        )
    case_glob = options.case_globs(case)
    meta_pairs = parse_meta(meta)
    k = options.samples_flag(samples, seed)
    return options.build_request(
        provider=provider,
        model=model,
        suite=suite,
        case=case_glob,
        script=script,
        cases=cases,
        out=out,
        repeats=k or repeats or 1,
        concurrency=concurrency,
        timeout=timeout,
        show_progress=show_progress,
        feature=feature,
        meta=meta_pairs,
        limit=limit,
        shard=shard,
        restart_per_case=restart_per_case,
        cooldown=cooldown,
        judge_cache=judge_cache,
        temperature=temperature,
        seed=seed,
        # A run draws afresh unless --seed pins it.
        seed_base=fresh_seed_base() if seed is None else 0,
        tools_exec=not no_tools_exec,
        # The rule and alpha `compare` will gate by (evalctl.toml as `compare` reads it).
        confirm=confirm_option.confirm_plan(baseline, confirm, options.read_only_settings),
    )


def fresh_seed_base() -> int:
    """A run's first sample seed: random and far above the 0..K-1 a baseline's samples use,
    so a run draws afresh instead of repeating the baseline's draws."""
    import secrets

    return 1_000_000 + secrets.randbelow(1_000_000_000)


def _repeats(case: CaseResult) -> str | None:
    passed, runs = case.pass_counts()
    if runs == 0 or case.pass_ci_low is None or case.pass_ci_high is None:
        return None
    return f"passed {passed}/{runs} (95% CI {case.pass_ci_low:.0%}-{case.pass_ci_high:.0%})"


def _write_reports(
    result: RunResult, junit: Path | None, markdown: Path | None
) -> tuple[str | None, str | None, str | None]:
    """Write the requested renderings of `result`; they are views of results.json, which
    stays the canonical record. Returns their paths and the Markdown text."""
    junit_path = markdown_path = markdown_text = None
    if junit is not None:
        from evalctl.reports.junit import write_junit

        junit_path = str(write_junit(result, junit))
    if markdown is not None:
        from evalctl.reports.markdown import write_markdown

        markdown_text = write_markdown(result, markdown, options.environ())
        markdown_path = None if markdown == MARKDOWN_STDOUT else str(markdown)
    return junit_path, markdown_path, markdown_text


def register(app: typer.Typer) -> None:
    app.command("run")(run)
