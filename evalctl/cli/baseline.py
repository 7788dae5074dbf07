"""`evalctl baseline`: write `baselines/<provider>.json` from a new run or from saved results."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import BaseModel
from rich.markup import escape

from evalctl.cli import history_store, options
from evalctl.cli.output import emit, stdout
from evalctl.config import Settings
from evalctl.errors import BadInputError, EvalctlError, GateFailedError
from evalctl.results.models import RunResult

if TYPE_CHECKING:
    from evalctl.baselines.model import Baseline

# Options that only make sense when `baseline` starts a run itself.
_RUN_ONLY = ("--model", "--suite", "--case", "--script", "--cases", "--temperature", "--seed")


class BaselineOutput(BaseModel):
    path: str
    replaced: bool
    provider: str
    model: str
    source_run_id: str
    results_path: str
    total: int
    passed: int
    failed: int
    flaky: int
    pass_rate: float
    min_pass_rate: float
    # Skipped cases are left out of the baseline: they say nothing about quality.
    skipped: list[str]
    # Entries kept from the previous baseline because a --suite/--case run did not select them.
    kept_outside_selection: int
    # Samples per case (`--samples`); 1 when the baseline was not sampled.
    samples: int = 1


def render(out: BaselineOutput) -> None:
    verb = "updated" if out.replaced else "wrote"
    # Paths are printed unwrapped and escaped so they survive copy and paste.
    stdout.print(
        f"[bold green]{verb}[/] {escape(out.path)}: {out.total} cases "
        f"({out.passed} pass, {out.failed} fail, {out.flaky} flaky; "
        f"run pass rate {out.pass_rate:.0%}, minimum {out.min_pass_rate:.0%})",
        soft_wrap=True,
    )
    stdout.print(
        escape(f"from run {out.source_run_id} ({out.provider} · {out.model}): {out.results_path}"),
        soft_wrap=True,
    )
    if out.samples > 1:
        stdout.print(f"{out.samples} samples per case; per case and per check pass counts kept")
    if out.kept_outside_selection:
        stdout.print(
            f"kept {out.kept_outside_selection} entries outside this run's --suite/--case selection"
        )
    if out.skipped:
        skipped = escape(", ".join(out.skipped))
        stdout.print(f"[yellow]left out {len(out.skipped)} skipped case(s):[/] {skipped}")


def baseline(
    from_results: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="Build from saved results (results.json or its run directory) instead of running.",
        ),
    ] = None,
    provider: Annotated[str | None, options.PROVIDER] = None,
    model: Annotated[str | None, options.MODEL] = None,
    suite: Annotated[list[str] | None, options.SUITE] = None,
    case: Annotated[list[str] | None, options.CASE] = None,
    script: Annotated[Path | None, options.SCRIPT] = None,
    cases: Annotated[list[Path] | None, options.CASES_PATH] = None,
    min_pass_rate: Annotated[
        float | None,
        typer.Option(
            "--min-pass-rate",
            min=0.0,
            max=1.0,
            help="Refuse below this share of passing scored cases, 0..1 (default: settings, 0.5).",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            "--out", "-o", help="Baseline file to write (default: baselines/<provider>.json)."
        ),
    ] = None,
    temperature: Annotated[float | None, options.TEMPERATURE] = None,
    seed: Annotated[int | None, options.SEED] = None,
    samples: Annotated[int | None, options.SAMPLES] = None,
    no_tools_exec: Annotated[bool, options.NO_TOOLS_EXEC] = False,
    allow_outside_paths: Annotated[bool, options.ALLOW_OUTSIDE_PATHS] = False,
    cell: Annotated[
        list[str] | None,
        typer.Option(
            "--cell",
            metavar="CELL_ID",
            help="With --from MATRIX_DIR: only this cell's baseline (repeatable).",
        ),
    ] = None,
    store: history_store.StoreOpt = None,
    no_store: history_store.NoStoreOpt = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Write the per-provider baseline that `evalctl compare` gates against.

    Refuses (exit 1) when fewer than --min-pass-rate of the scored cases pass.

    Refuses (exit 1) when any case ended in an infrastructure error.

    Skipped cases are left out. A --suite/--case run replaces only the entries it selected.

    --temperature and --seed apply to the run it starts (not with --from).

    --no-tools-exec refuses suites whose tools run code (docs/security.md).

    --samples K runs every case K times, sample r with seed r (a greedy suite at a low
    temperature), and stores per case and per check how many samples passed. With --from it
    only checks that the results hold K samples.

    Writers of one baseline file take turns (a lock file beside it), so narrowed runs
    written into one file at once each keep their update.

    --from MATRIX_DIR (a matrix run) writes one baseline per cell, <cell-id>.json in the
    baselines directory (or the directory --out names), which `evalctl compare
    BASELINES_DIR MATRIX_DIR` gates each cell on; none is written when one is refused.
    """
    # Imported on use so `evalctl --help` loads none of the library.
    from evalctl.baselines.write import baseline_path
    from evalctl.results.matrix import is_matrix_dir

    options.path_rule(allow_outside_paths, no_tools_exec)
    if cell and (from_results is None or not is_matrix_dir(from_results)):
        raise BadInputError("only applies with --from MATRIX_DIR (a matrix run)", field="--cell")
    settings = options.settings_from_env(cases, code_may_run=not no_tools_exec)
    bar = settings.min_pass_rate if min_pass_rate is None else min_pass_rate
    if from_results is not None:
        given = (model, suite, case, script, cases, temperature, seed)
        for flag, value in zip(_RUN_ONLY, given, strict=True):
            if value:
                raise BadInputError(
                    "cannot be combined with --from: those results have already been run",
                    field=flag,
                )
        if is_matrix_dir(from_results):
            outputs = _matrix_baselines(from_results, provider, cell, out, samples, bar, settings)
            emit(MatrixBaselineOutput(baselines=outputs), as_json, _render_matrix)
            return
        run, results_path = _from_file(from_results, provider)
        _check_samples(run, results_path, samples)
    else:
        if samples is not None:
            k = options.samples_flag(samples, seed)
        else:
            configured = settings.baseline_samples
            k = options.samples_flag(configured, seed, "baseline_samples in evalctl.toml")
        # A baseline's samples use seeds 0..K-1 (seed_base 0).
        request = options.build_request(
            provider=provider,
            model=model,
            suite=suite,
            case=options.case_globs(case),
            script=script,
            cases=cases,
            repeats=k or 1,
            show_progress=not as_json,
            temperature=temperature,
            seed=seed,
            tools_exec=not no_tools_exec,
        )
        env = options.environ()
        request = history_store.with_store(request, settings, env, store, no_store)
        from evalctl.runner.execute import execute_run

        outcome = execute_run(request, settings, options.environ())
        run, results_path = outcome.result, outcome.results_path

    path = out or baseline_path(settings.baselines_dir, run.provider.name)

    def record(outcome: str, code: int, body: dict[str, object]) -> None:
        history_store.record_verdict(
            settings, options.environ(), store, no_store, kind="baseline",
            subject=f"{run.provider.name}/{run.provider.model}", outcome=outcome,
            exit_code=code, body={"path": str(path), "run_id": run.run_id, **body},
        )  # fmt: skip

    try:
        output = _write_one(run, results_path, path, bar, settings)
    except EvalctlError as exc:
        record("refused", int(exc.code), {"message": exc.message})
        raise
    record("written", 0, output.model_dump(mode="json"))
    emit(output, as_json, render)


class CellBaselineOutput(BaselineOutput):
    cell: str


class MatrixBaselineOutput(BaseModel):
    baselines: list[CellBaselineOutput]


def _render_matrix(out: MatrixBaselineOutput) -> None:
    for one in out.baselines:
        stdout.print(f"[bold]cell {escape(one.cell)}[/]", soft_wrap=True)
        render(one)


def _matrix_baselines(
    directory: Path,
    provider: str | None,
    cells: list[str] | None,
    out: Path | None,
    samples: int | None,
    bar: float,
    settings: Settings,
) -> list[CellBaselineOutput]:
    """One baseline per cell of the matrix run in `directory`. Every cell's is built before
    any is written, so a refused cell leaves the directory as it was."""
    from evalctl.results.io import read_run
    from evalctl.results.matrix import cell_results_path, read_matrix

    if provider is not None:
        raise BadInputError(
            "cannot be combined with --from MATRIX_DIR: each cell's baseline is named by its "
            "cell; --cell picks cells",
            field="--provider",
        )
    index = read_matrix(directory)
    ran = index.ran()
    unknown = sorted(set(cells or []) - {c.id for c in ran})
    if unknown:
        raise BadInputError(
            f"no such cell with results: {', '.join(unknown)} "
            f"(cells: {', '.join(c.id for c in ran)})",
            file=str(directory / "matrix.json"),
            field="--cell",
        )
    chosen = [c for c in ran if not cells or c.id in cells]
    runs = []
    for c in chosen:
        results_path = cell_results_path(directory, c)
        run = read_run(results_path)
        _check_samples(run, results_path, samples)
        _built(run, results_path, bar, settings)  # refused here, before any file is written
        runs.append((c.id, run, results_path))
    target = out or settings.baselines_dir
    return [
        CellBaselineOutput(
            cell=cell_id,
            **_write_one(run, path, target / f"{cell_id}.json", bar, settings).model_dump(),
        )
        for cell_id, run, path in runs
    ]


def _write_one(
    run: RunResult, results_path: Path, path: Path, bar: float, settings: Settings
) -> BaselineOutput:
    """Build the baseline of `run` and write it to `path` (merged into the file there when
    the run was narrowed); refused below `bar` or with an infrastructure error."""
    from evalctl.baselines.model import read_baseline
    from evalctl.baselines.scope import is_filtered
    from evalctl.baselines.write import (
        baseline_lock,
        merge_baseline,
        skipped_cases,
        write_baseline,
    )

    fresh = _built(run, results_path, bar, settings)
    _refuse_non_baseline(path)
    # Read, merge and write under one lock, or a concurrent writer's update is lost.
    with baseline_lock(path):
        _refuse_non_baseline(path)  # again: another writer may have put a file there since
        replaced = path.exists()
        kept = 0
        if replaced and is_filtered(run):
            fresh, kept = merge_baseline(read_baseline(path), fresh, run)
        write_baseline(fresh, path)

    statuses = list(fresh.baselines.values())
    scored = [c for c in run.cases if c.status in ("pass", "fail", "flaky")]
    return BaselineOutput(
        path=str(path),
        replaced=replaced,
        provider=fresh.provider,
        model=fresh.model,
        source_run_id=run.run_id,
        results_path=str(results_path),
        total=len(statuses),
        passed=statuses.count("pass"),
        failed=statuses.count("fail"),
        flaky=statuses.count("flaky"),
        pass_rate=sum(1 for c in scored if c.status == "pass") / len(scored),
        min_pass_rate=bar,
        skipped=skipped_cases(run),
        kept_outside_selection=kept,
        samples=run.settings.samples_per_case,
    )


def _refuse_non_baseline(path: Path) -> None:
    """A baseline is written over a baseline only: any other file at `path` (a run's
    results.json, a package.json, a directory) would be lost, so it is refused (exit 2)."""
    from evalctl.results.document import load_document

    if not path.exists() and not path.is_symlink():
        return
    why = "is a directory" if path.is_dir() else None
    if why is None:
        try:
            kind = load_document(path).kind
        except BadInputError as exc:
            why = f"is not a baseline: {exc.detail}"
        else:
            if kind != "baseline":
                why = "is not a baseline but " + ("run results" if kind == "run" else "other JSON")
    if why is not None:
        raise BadInputError(
            f"{why}; evalctl replaces only a baseline file",
            file=str(path),
            field="--out",
            hint="remove it, or name another file (or a directory, with --from MATRIX_DIR)",
        )


def _built(run: RunResult, results_path: Path, bar: float, settings: Settings) -> Baseline:
    from evalctl.baselines.write import build_baseline

    try:
        return build_baseline(run, bar, settings.prices)
    except GateFailedError as exc:
        # The results stay on disk either way; say where, so the refusal can be investigated.
        where = f"results: {results_path}"
        exc.hint = f"{exc.hint}\n{where}" if exc.hint else where
        raise


def _from_file(path: Path, provider: str | None) -> tuple[RunResult, Path]:
    from evalctl.results.document import resolve_results_path
    from evalctl.results.io import read_run

    results_path = resolve_results_path(path)
    run = read_run(results_path)
    # With --from, --provider is a guard against writing one provider's results under
    # another's name (e.g. scripted results as baselines/local.json).
    if provider is not None and provider != run.provider.name:
        raise BadInputError(
            f"the results were produced by provider {run.provider.name!r}, not {provider!r}",
            file=str(results_path),
            field="provider.name",
        )
    return run, results_path


def _check_samples(run: RunResult, results_path: Path, samples: int | None) -> None:
    """`--samples K --from`: the results were sampled already, so the flag can only say how
    many samples they must hold; a mismatch is bad input rather than a silent other K."""
    if samples is None:
        return
    held = run.settings.samples_per_case
    if held != samples:
        raise BadInputError(
            f"the results hold {held} sample(s) per case, not {samples}; --samples with "
            "--from only checks the count",
            file=str(results_path),
            field="--samples",
            hint=f"record them with `evalctl run --samples {samples}` (or baseline without --from)",
        )


def register(app: typer.Typer) -> None:
    app.command("baseline")(baseline)
