"""Writing a matrix run's reports, `matrix.html` and `matrix.md`, beside its `matrix.json`,
from the index and the cells' results files."""

from __future__ import annotations

from pathlib import Path

from evalctl.reports.matrix_markdown import matrix_markdown
from evalctl.reports.matrix_page import matrix_html
from evalctl.reports.matrix_view import matrix_view
from evalctl.reports.write import write_report
from evalctl.results.io import read_run
from evalctl.results.matrix import MatrixIndex, cell_results_path
from evalctl.results.models import RunResult

HTML_FILE = "matrix.html"
MARKDOWN_FILE = "matrix.md"


def read_cell_runs(directory: Path, index: MatrixIndex) -> dict[str, RunResult]:
    """Each cell's results that ran, by cell id."""
    return {c.id: read_run(cell_results_path(directory, c)) for c in index.ran()}


def write_matrix_reports(
    directory: Path, index: MatrixIndex, runs: dict[str, RunResult] | None = None
) -> tuple[Path, Path]:
    """Write both reports into `directory`; `runs` (by cell id) when the caller holds them
    already, else they are read. Returns the HTML and Markdown paths (redacted as every file
    is, by the atomic write)."""
    view = matrix_view(index, read_cell_runs(directory, index) if runs is None else runs)
    html = write_report(directory / HTML_FILE, matrix_html(view))
    markdown = write_report(directory / MARKDOWN_FILE, matrix_markdown(view))
    return html, markdown
