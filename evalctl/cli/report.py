"""`evalctl report`: render a result file as an HTML page and/or the runbook's Markdown.

The renderer follows the file's `kind`: run results, a soak or a crash-test. A run's page
against `--baseline` shows the comparison `evalctl compare` would make, by the same function
(`baselines.gating.gate_one`): the same gate settings (`--gate`, `--alpha`, else `compare_gate`
and `compare_alpha` in evalctl.toml), so the same verdict and exit code.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import BaseModel
from rich.markup import escape

from evalctl.cli import options
from evalctl.cli.output import emit, stdout
from evalctl.errors import BadInputError
from evalctl.secrets import redact

if TYPE_CHECKING:
    from evalctl.baselines.comparison import Comparison
    from evalctl.results.document import Document
    from evalctl.results.matrix import MatrixIndex

STDOUT = Path("-")


class ReportOutput(BaseModel):
    source: str
    kind: str
    html_path: str | None = None
    bytes: int = 0
    baseline: str | None = None
    # "-" when the Markdown went to standard output.
    markdown_path: str | None = None
    markdown_bytes: int = 0
    # Against --baseline: the rule, and what `evalctl compare` says and exits with.
    gate: str | None = None
    verdict: str | None = None
    exit_code: int | None = None


def render(out: ReportOutput) -> None:
    against = f" against {out.baseline}" if out.baseline else ""
    if out.html_path:
        stdout.print(
            escape(f"wrote {out.html_path} ({out.bytes} bytes) from {out.source}{against}"),
            soft_wrap=True,
        )
    if out.markdown_path and out.markdown_path != str(STDOUT):
        stdout.print(
            escape(f"wrote {out.markdown_path} ({out.markdown_bytes} bytes) from {out.source}"),
            soft_wrap=True,
        )
    if out.verdict is not None:
        stdout.print(
            escape(f"compare ({out.gate} gate): {out.verdict} (exit {out.exit_code})"),
            soft_wrap=True,
        )


def report(
    results: Annotated[
        Path,
        typer.Argument(
            metavar="RESULTS",
            help=(
                "A result file or directory (run, soak or crash-test, or a matrix run's "
                "directory), or a baseline (--markdown)."
            ),
        ),
    ],
    html: Annotated[Path | None, typer.Option("--html", help="The HTML file to write.")] = None,
    markdown: Annotated[
        Path | None,
        typer.Option(
            "--markdown",
            metavar="FILE",
            help="Write the runbook's results section as Markdown here ('-': standard output).",
        ),
    ] = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            "-b",
            help="Also show the comparison with this baseline (a matrix: a directory of "
            "baselines, one per cell).",
        ),
    ] = None,
    gate: Annotated[
        str | None,
        typer.Option(
            "--gate",
            metavar="RULE",
            help="With --baseline: the rule, as for evalctl compare (default: compare_gate "
            "in evalctl.toml, else statistical).",
            show_default=False,
        ),
    ] = None,
    alpha: Annotated[
        float | None,
        typer.Option(
            "--alpha",
            help="With --baseline: the false-alarm rate, as for evalctl compare (default: "
            "compare_alpha in evalctl.toml).",
            show_default=False,
        ),
    ] = None,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Render results as one self-contained HTML page and/or as runbook Markdown.

    HTML: inline CSS and SVG, no scripts, nothing fetched: for a run the summary, the diff
    against --baseline, the latency distribution and every case; for a soak the verdict and
    the memory charts; for a crash-test every kill. Markdown (--markdown FILE, or - for
    standard output): the results template of runbooks/full-benchmark.md, soak.md or
    new-model-validation.md, filled in; for a baseline, its quality table (cases and checks
    passed per suite, from the baseline and the results committed beside it).

    A matrix run's directory: its side-by-side report (matrix.html and matrix.md, as the run
    wrote them) drawn again from its matrix.json and the cells' results; with --baseline
    BASELINES_DIR each cell gated on its own <cell-id>.json as `evalctl compare BASELINES_DIR
    MATRIX_DIR` gates it, its verdict in its column and each case's change in its cell.

    --baseline gates as `evalctl compare BASELINE RESULTS` does, with the same settings
    (--gate, --alpha, else evalctl.toml's), and shows its verdict and exit code; report
    itself exits 0 when it wrote the page.

    Exit 2 when a file is malformed or of a kind that has no report.
    """
    from evalctl.reports.write import write_report
    from evalctl.results.document import load_document

    if html is None and markdown is None:
        raise BadInputError(
            "say what to write: --html FILE and/or --markdown FILE ('-' for standard output)",
            field="--html",
        )
    if markdown == STDOUT and as_json:
        raise BadInputError("cannot print Markdown and --json together", field="--markdown")
    if baseline is None and (gate is not None or alpha is not None):
        raise BadInputError(
            "only applies with --baseline", field="--gate" if gate is not None else "--alpha"
        )
    from evalctl.results.matrix import is_matrix_dir

    if is_matrix_dir(results):
        emit(_matrix_report(results, html, markdown, baseline, gate, alpha), as_json, render)
        return
    doc = load_document(results)
    kind = doc.data.get("kind")
    output = ReportOutput(
        source=str(doc.path), kind=kind if isinstance(kind, str) else str(doc.kind)
    )
    if html is not None:
        from evalctl.reports.pages import render_document

        baseline_doc = load_document(baseline) if baseline is not None else None
        comparison = (
            _comparison(doc, baseline_doc, gate, alpha) if baseline_doc is not None else None
        )
        text = render_document(doc, comparison, view_url=_view_url())
        write_report(html, text)
        output.html_path = str(html)
        output.bytes = len(text.encode("utf-8"))
        output.baseline = str(baseline_doc.path) if baseline_doc else None
        if comparison is not None:
            verdict = comparison.verdict
            output.gate = comparison.gate
            output.verdict = f"{verdict.word}: {verdict.summary}"
            output.exit_code = int(verdict.exit_code)
    elif baseline is not None:
        raise BadInputError("only applies with --html", field="--baseline")
    if markdown is not None:
        from evalctl.reports.runbook import render_markdown

        text = render_markdown(doc)
        output.markdown_path = str(markdown)
        output.markdown_bytes = len(text.encode("utf-8"))
        if markdown == STDOUT:
            sys.stdout.write(redact(text))
            sys.stdout.flush()
        else:
            write_report(markdown, text)
    emit(output, as_json, render)


def _matrix_report(
    directory: Path,
    html: Path | None,
    markdown: Path | None,
    baseline: Path | None = None,
    gate: str | None = None,
    alpha: float | None = None,
) -> ReportOutput:
    """A matrix run's side-by-side report, drawn again from its matrix.json and the cells'
    results (after a cell was resumed, say); with `baseline`, a directory of baselines,
    each cell gated on `<cell-id>.json` as `evalctl compare BASELINES_DIR MATRIX_DIR` gates
    it, its verdict in its column and each case's change in its cell."""
    from evalctl.reports.matrix_markdown import matrix_markdown
    from evalctl.reports.matrix_page import matrix_html
    from evalctl.reports.matrix_view import matrix_view
    from evalctl.reports.matrix_write import read_cell_runs
    from evalctl.reports.write import write_report
    from evalctl.results.matrix import MATRIX_FILE, read_matrix

    index = read_matrix(directory)
    comparisons, notes = _cell_comparisons(directory, index, baseline, gate, alpha)
    view = matrix_view(index, read_cell_runs(directory, index), comparisons, notes)
    output = ReportOutput(source=str(directory / MATRIX_FILE), kind="matrix")
    if baseline is not None:
        from evalctl.baselines.gating import CellComparison, MatrixComparison

        verdict = MatrixComparison(
            baselines_dir=str(baseline),
            matrix_dir=str(directory),
            run_id=index.run_id,
            cells=[
                CellComparison(
                    cell=cell_id,
                    provider="",
                    outcome="gated",
                    baseline_file=str(baseline / f"{cell_id}.json"),
                    comparison=comparison,
                )
                for cell_id, comparison in comparisons.items()
            ],
        ).verdict
        output.baseline = str(baseline)
        output.gate = next(iter(comparisons.values())).gate
        output.verdict = f"{verdict.word}: {verdict.summary}"
        output.exit_code = int(verdict.exit_code)
    if html is not None:
        text = matrix_html(view)
        write_report(html, text)
        output.html_path, output.bytes = str(html), len(text.encode("utf-8"))
    if markdown is not None:
        text = matrix_markdown(view)
        output.markdown_path, output.markdown_bytes = str(markdown), len(text.encode("utf-8"))
        if markdown == STDOUT:
            sys.stdout.write(redact(text))
            sys.stdout.flush()
        else:
            write_report(markdown, text)
    return output


def _cell_comparisons(
    directory: Path,
    index: MatrixIndex,
    baselines: Path | None,
    gate: str | None,
    alpha: float | None,
) -> tuple[dict[str, Comparison], dict[str, str]]:
    """Each cell that ran gated on `<baselines>/<cell-id>.json`, by what `evalctl compare
    BASELINES_DIR MATRIX_DIR` runs (`gate_one`, the cells sharing alpha equally); and why
    each other cell that ran was not. Nothing without `baselines`."""
    if baselines is None:
        return {}, {}
    from evalctl.baselines.gating import GateOptions, cell_alpha, gate_one, read_results
    from evalctl.results.document import load_document
    from evalctl.results.matrix import cell_results_path

    if not baselines.is_dir():
        raise BadInputError(
            "a matrix is gated cell by cell against a directory of baselines, <cell-id>.json each",
            file=str(baselines),
            field="--baseline",
            hint=f"evalctl baseline --from {directory} writes them",
        )
    from evalctl.cli.options import read_only_settings

    settings = read_only_settings()
    per_cell = cell_alpha(alpha, len(index.cells), settings)
    comparisons: dict[str, Comparison] = {}
    notes: dict[str, str] = {}
    for cell in index.ran():
        file = baselines / f"{cell.id}.json"
        if not file.is_file():
            notes[cell.id] = f"no baseline for this cell ({file.name})"
            continue
        comparisons[cell.id] = gate_one(
            load_document(file, skip_conversations=True),
            read_results(cell_results_path(directory, cell)),
            GateOptions(gate, per_cell),
            settings,
        )
    if not comparisons:
        raise BadInputError(
            "no cell of the matrix has a baseline here (expected <cell-id>.json: "
            + ", ".join(f"{c.id}.json" for c in index.cells)
            + ")",
            file=str(baselines),
            field="--baseline",
            hint=f"record them with: evalctl baseline --from {directory}",
        )
    return comparisons, notes


def _comparison(
    doc: Document, baseline_doc: Document, gate: str | None, alpha: float | None
) -> Comparison | None:
    """The comparison the run page shows: computed here, since a renderer never runs one,
    by what `evalctl compare` runs (`gate_one`), so the page's verdict is compare's."""
    from evalctl.baselines.gating import GateOptions, gate_one
    from evalctl.reports.pages import PAGE_RENDERERS, document_kind, refuse_comparison

    kind = document_kind(doc)
    if kind not in PAGE_RENDERERS:
        return None  # rendering refuses the kind, naming the kinds it knows
    if kind != "run":
        refuse_comparison(baseline_doc, kind)
    from evalctl.cli.options import read_only_settings

    return gate_one(baseline_doc, doc, GateOptions(gate, alpha), read_only_settings())


def _view_url() -> str | None:
    # `[history] view_url`: where the team's `evalctl view` is served, for the page's links.
    from evalctl.cli.options import read_only_settings

    return read_only_settings().history.view_url


def register(app: typer.Typer) -> None:
    app.command("report")(report)
