"""`evalctl report`: render a results file as one self-contained HTML page."""

from __future__ import annotations

from pathlib import Path

import typer
from pydantic import BaseModel
from rich.markup import escape

from evalctl.cli import options
from evalctl.cli.output import emit, stdout


class ReportOutput(BaseModel):
    source: str
    kind: str
    html_path: str
    bytes: int
    baseline: str | None = None


def render(out: ReportOutput) -> None:
    against = f" against {out.baseline}" if out.baseline else ""
    stdout.print(
        escape(f"wrote {out.html_path} ({out.bytes} bytes) from {out.source}{against}"),
        soft_wrap=True,
    )


def report(
    results: Path = typer.Argument(..., metavar="RESULTS", help="Results (file or run directory)."),
    html: Path = typer.Option(..., "--html", help="The HTML file to write."),
    baseline: Path | None = typer.Option(
        None, "--baseline", "-b", help="Also show the comparison with this baseline."
    ),
    as_json: bool = options.JSON,
) -> None:
    """Write results as one self-contained HTML page.

    Inline CSS and SVG, no scripts, nothing fetched: the summary, the diff against
    --baseline, the latency distribution and every case.

    Exit 2 when a file is malformed or of a kind that has no report.
    """
    from evalctl.results.document import load_document
    from evalctl.results.html import render_document
    from evalctl.results.report_io import write_report

    doc = load_document(results)
    baseline_doc = load_document(baseline) if baseline is not None else None
    text = render_document(doc, baseline_doc)
    write_report(html, text)
    kind = doc.data.get("kind")
    output = ReportOutput(
        source=str(doc.path),
        kind=kind if isinstance(kind, str) else str(doc.kind),
        html_path=str(html),
        bytes=len(text.encode("utf-8")),
        baseline=str(baseline_doc.path) if baseline_doc else None,
    )
    emit(output, as_json, render)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
