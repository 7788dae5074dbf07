"""`evalctl run` with several providers, models or prompt variants: which cells to run, and
the matrix's output (each cell's figures, and where the results and reports are)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel
from rich.markup import escape
from rich.table import Table

from evalctl.cli import options
from evalctl.cli.output import emit, stderr, stdout
from evalctl.config import Settings
from evalctl.errors import BadInputError, Ended, ExitCode, Outcome
from evalctl.results.models import Summary
from evalctl.results.text import percent
from evalctl.runner.api import RunRequest

if TYPE_CHECKING:
    # Imported on use: the runner is loaded only when a run starts (`run --help` loads none).
    from evalctl.runner.matrix import Cell, MatrixRun

# The flags a matrix cannot take, in the order `run` hands their values over.
_ONE_RUN_ONLY = ("--resume", "--shard", "--junit", "--markdown", "--restart-per-case")


class CellLine(BaseModel):
    cell: str
    provider: str
    model: str  # the model the cell's run used (its default when none was given)
    prompt: str | None = None
    ran: bool
    skip_reason: str | None = None
    results_path: str | None = None
    summary: Summary | None = None


class MatrixOutput(BaseModel):
    run_id: str
    out_dir: str
    matrix_path: str
    html_path: str
    markdown_path: str
    cells: list[CellLine]


def matrix_plan(
    providers: Sequence[str],
    models: Sequence[str],
    exclusive: Sequence[object],
    suite_paths: Sequence[Path] | None = None,
    *,
    code_may_run: bool = True,
) -> tuple[list[Cell], Settings] | None:
    """The cells to run when this is a matrix, else None (one run, as before): several
    --provider or --model values, or evalctl.toml's [matrix] when neither flag is given.
    Flags replace the matrix's providers and models, never its prompt variants: with a
    [matrix] that has some, one --provider or --model runs each of them (and says so)."""
    from evalctl.providers.options import ProviderOptions
    from evalctl.providers.registry import detect
    from evalctl.runner.matrix import MatrixSource, plan_cells
    from evalctl.runner.prompt_variant import variant_templates

    if "all" in providers:
        if len(providers) > 1:
            raise BadInputError("all runs every provider: give it alone", field="--provider")
        return None
    from_flags = len(providers) > 1 or len(models) > 1
    resume = exclusive[0]
    # With the plugins configured: a plugin's provider may be one of the matrix's.
    settings = options.settings_from_env(suite_paths, code_may_run=code_may_run)
    matrix = settings.matrix if resume is None else None
    config = str(settings.config_file) if settings.config_file else None
    variants: dict[str, str] = {}
    if matrix is not None and matrix.prompts:
        base = settings.config_file.parent if settings.config_file else Path.cwd()
        variants = variant_templates(matrix.prompts, base, file=config, field="matrix.prompts")
    if not from_flags and (providers or models) and not variants:
        return None
    if not from_flags and not (providers or models) and matrix is None:
        return None
    for flag, value in zip(_ONE_RUN_ONLY, exclusive, strict=True):
        if value:
            where = "several --provider/--model values" if from_flags else "[matrix]"
            raise BadInputError(
                f"cannot be combined with a matrix ({where}): run one cell at a time for it",
                field=flag,
                hint="one --provider (and --model) runs one cell; a matrix cell's directory "
                "is an ordinary run",
            )
    if providers or models:
        # Errors in the flags name no file; the variants' name their key in evalctl.toml.
        source = MatrixSource(prompts="matrix.prompts")
        given = list(providers) or [detect(ProviderOptions(settings, options.environ()))]
        if variants:
            stderr.print(
                f"prompt variants from {escape('[matrix]')} in {escape(config or 'evalctl.toml')}: "
                f"{escape(', '.join(variants))} (--provider/--model replace its providers "
                "and models only)",
                soft_wrap=True,
            )
        return plan_cells(given, models, variants, source), settings
    assert matrix is not None
    source = MatrixSource(
        providers="matrix.providers",
        models="matrix.models",
        prompts="matrix.prompts",
        file=config,
    )
    return plan_cells(matrix.providers, matrix.models, variants, source), settings


def run_matrix(request: RunRequest, cells: list[Cell], as_json: bool) -> Outcome | None:
    from evalctl.runner.matrix import check_available, execute_matrix
    from evalctl.runner.prompt_variant import check_variants

    settings = options.settings_from_env(request.paths, code_may_run=request.tools_exec)
    env = options.environ()
    # Bad input (exit 2) before an unavailable provider (exit 3).
    variants = {c.prompt: c.template for c in cells if c.prompt and c.template is not None}
    config = str(settings.config_file) if settings.config_file else None
    check_variants(variants, request, settings, file=config)
    check_available(cells, request, settings, env)
    matrix = execute_matrix(request, cells, settings, env, on_interrupt=_reports_from_disk)
    html, markdown = matrix_reports(matrix)
    output = MatrixOutput(
        run_id=matrix.run_id,
        out_dir=str(matrix.out_dir),
        matrix_path=str(matrix.index_path),
        html_path=str(html),
        markdown_path=str(markdown),
        cells=[
            CellLine(
                cell=r.cell.id,
                provider=r.cell.provider,
                model=r.outcome.result.provider.model if r.outcome else r.cell.model or "",
                prompt=r.cell.prompt,
                ran=r.outcome is not None,
                skip_reason=r.skip_reason,
                results_path=str(r.outcome.results_path) if r.outcome else None,
                summary=r.outcome.result.summary if r.outcome else None,
            )
            for r in matrix.cells
        ],
    )
    emit(output, as_json, render_matrix)
    failed = any(r.outcome and r.outcome.result.summary.errors for r in matrix.cells)
    return Ended(ExitCode.INFRA) if failed else None


def matrix_reports(matrix: MatrixRun) -> tuple[Path, Path]:
    from evalctl.reports.matrix_write import write_matrix_reports

    runs = {r.cell.id: r.outcome.result for r in matrix.cells if r.outcome is not None}
    return write_matrix_reports(matrix.out_dir, matrix.index, runs)


def resumed_cell(run_dir: Path, results_path: Path) -> Path | None:
    """After `run --resume` of a matrix cell's directory: the cell back in `matrix.json` and
    the matrix reports written again from the cells' results. Returns the index's path;
    None when the run is not a matrix cell."""
    from evalctl.reports.matrix_write import write_matrix_reports
    from evalctl.results.matrix import MATRIX_FILE
    from evalctl.runner.matrix import record_resumed_cell

    found = record_resumed_cell(run_dir, results_path)
    if found is None:
        return None
    matrix_dir, index = found
    write_matrix_reports(matrix_dir, index)
    return matrix_dir / MATRIX_FILE


def _reports_from_disk(matrix: MatrixRun) -> None:
    """An interrupted matrix's report of the cells it holds, the interrupted one's finished
    cases included (its results were written, but its outcome never came back)."""
    from evalctl.reports.matrix_write import write_matrix_reports

    write_matrix_reports(matrix.out_dir, matrix.index)


def render_matrix(out: MatrixOutput) -> None:
    table = Table(title=f"matrix {out.run_id}", title_justify="left")
    # A cell id is what a reader passes to `baseline --cell` and greps for: never folded.
    table.add_column("cell", no_wrap=True)
    for column in ("model", "passed", "errors", "tokens in/out", "p50/p95"):
        table.add_column(column, overflow="fold")
    for line in out.cells:
        s = line.summary
        if s is None:
            reason = escape(line.skip_reason or "")
            table.add_row(escape(line.cell), "-", "[dim]skipped[/]", "-", "-", reason)
            continue
        table.add_row(
            escape(line.cell),
            escape(line.model),
            f"{s.passed}/{s.total} ({percent(s.pass_rate)})",
            str(s.errors),
            f"{s.usage.input_tokens}/{s.usage.output_tokens}",
            f"{s.latency_ms.p50:.0f}/{s.latency_ms.p95:.0f} ms",
        )
    stdout.print(table)
    for label, path in (
        ("results", out.out_dir),
        ("report", out.html_path),
        ("markdown", out.markdown_path),
        ("index", out.matrix_path),
    ):
        stdout.print(f"{label}: {escape(path)}", soft_wrap=True)
