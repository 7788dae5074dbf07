"""`evalctl compare BASELINES_DIR MATRIX_DIR`: each cell of a matrix run gated on its own
baseline, `<BASELINES_DIR>/<cell-id>.json` (what `evalctl baseline --from MATRIX_DIR`
writes). The exit is the worst of the cells' (a regression over an unscored case, as in one
comparison), and the verdict names the cell and the cases of each regression.

A cell without a baseline file is `new`: listed, with the command that records it, and not
gated, as a new case is not; a matrix none of whose cells has a baseline is bad input, since
it would gate nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, computed_field
from rich.markup import escape
from rich.rule import Rule
from rich.table import Table

from evalctl.baselines.comparison import CATEGORIES, Comparison, GateVerdict
from evalctl.cli.compare import render_comparison, step_summary
from evalctl.cli.output import emit, stdout
from evalctl.errors import BadInputError, ExitCode
from evalctl.results.matrix import cell_results_path, read_matrix
from evalctl.results.text import STATUS_STYLE

# A regression says more than an unscored case (as in one comparison's verdict).
_SEVERITY = (ExitCode.GATE_FAILED, ExitCode.INFRA)

GateCell = Callable[[Path, Path], Comparison]


class CellComparison(BaseModel):
    cell: str
    provider: str
    model: str | None = None
    prompt: str | None = None
    # gated: compared with its baseline; new: no baseline file; skipped: the cell did not run.
    outcome: Literal["gated", "new", "skipped"]
    baseline_file: str
    results_file: str | None = None
    reason: str | None = None
    comparison: Comparison | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> ExitCode:
        return self.comparison.exit_code if self.comparison else ExitCode.OK


class MatrixComparison(BaseModel):
    kind: Literal["matrix_comparison"] = "matrix_comparison"
    baselines_dir: str
    matrix_dir: str
    run_id: str
    cells: list[CellComparison]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdict(self) -> GateVerdict:
        gated = [c for c in self.cells if c.comparison is not None]
        for code in _SEVERITY:
            failing = [c for c in gated if c.exit_code == code]
            if failing:
                return GateVerdict(
                    exit_code=code,
                    reasons=[
                        f"cell {c.cell}: {reason}"
                        for c in failing
                        if c.comparison is not None
                        for reason in c.comparison.verdict.reasons
                    ],
                    hint=next((c.comparison.verdict.hint for c in failing if c.comparison), None),
                )
        return GateVerdict(exit_code=ExitCode.OK)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> ExitCode:
        return self.verdict.exit_code


def compare_matrix(
    baselines_dir: Path,
    matrix_dir: Path,
    gate_cell: GateCell,
    as_json: bool,
    limit: int | None,
) -> GateVerdict:
    if not baselines_dir.is_dir():
        raise BadInputError(
            "a matrix run is gated against a directory of baselines, one per cell",
            file=str(baselines_dir),
            hint=f"evalctl compare baselines/ {matrix_dir}",
        )
    index = read_matrix(matrix_dir)
    cells: list[CellComparison] = []
    for cell in index.cells:
        baseline = baselines_dir / f"{cell.id}.json"
        entry = CellComparison(
            cell=cell.id,
            provider=cell.provider,
            model=cell.model,
            prompt=cell.prompt,
            outcome="skipped",
            baseline_file=str(baseline),
            reason=cell.skip_reason,
        )
        if cell.results is not None:
            results = cell_results_path(matrix_dir, cell)
            entry.results_file = str(results)
            if baseline.is_file():
                entry.outcome = "gated"
                entry.comparison = gate_cell(baseline, results)
            else:
                entry.outcome = "new"
                entry.reason = "no baseline for this cell"
        cells.append(entry)
    if not any(c.outcome == "gated" for c in cells):
        raise BadInputError(
            "no cell of the matrix has a baseline here (expected <cell-id>.json: "
            + ", ".join(f"{c.cell}.json" for c in cells)
            + ")",
            file=str(baselines_dir),
            hint=f"record them with: evalctl baseline --from {matrix_dir}",
        )
    result = MatrixComparison(
        baselines_dir=str(baselines_dir),
        matrix_dir=str(matrix_dir),
        run_id=index.run_id,
        cells=cells,
    )
    emit(result, as_json, lambda out: render_matrix_comparison(out, limit))
    for c in cells:
        if c.comparison is not None:
            step_summary(c.comparison)
    return result.verdict


def _counts(cmp: Comparison) -> str:
    """The categories a cell has entries in: `1 regression · 200 unchanged`."""
    counts = ((c, len(cmp.entries(c))) for c in CATEGORIES if c.counted)
    return " · ".join(c.count(n) for c, n in counts if n)


def render_matrix_comparison(out: MatrixComparison, limit: int | None) -> None:
    for c in out.cells:
        if c.comparison is None:
            continue
        stdout.print(Rule(f"cell {escape(c.cell)}", align="left"))
        render_comparison(c.comparison, limit)
    table = Table(title=f"matrix {escape(out.run_id)}", title_justify="left", show_edge=False)
    table.add_column("cell", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for c in out.cells:
        if c.comparison is not None:
            verdict = c.comparison.verdict
            word = f"[{STATUS_STYLE[verdict.exit_code.tone]}]{verdict.word}[/]"
            detail = _counts(c.comparison)
        else:
            word = f"[dim]{c.outcome}[/]"
            detail = f"{c.reason or ''} ({c.baseline_file})"
        table.add_row(escape(c.cell), word, escape(detail))
    stdout.print(table)
    new = [c for c in out.cells if c.outcome == "new"]
    if new:
        stdout.print(f"{len(new)} cell(s) without a baseline, not gated; to record them:")
        stdout.print(
            f"  evalctl baseline --from {out.matrix_dir}",
            soft_wrap=True,
            markup=False,
            highlight=False,
        )
