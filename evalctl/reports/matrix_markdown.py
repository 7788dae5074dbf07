"""A matrix run in Markdown (`matrix.md`): each cell's figures, then each case's status and
answer per cell, side by side. Answers are cut to one table line; the HTML report
(`matrix.html`) and each cell's results hold them whole."""

from __future__ import annotations

from evalctl.reports.markdown import cell
from evalctl.reports.matrix_view import MatrixView, Row, answer, failed_checks

_ICONS = {"pass": "✅", "fail": "❌", "error": "💥", "skipped": "⏭️", "flaky": "🎲"}
# Short enough that four cells side by side still read in a pull request.
_ANSWER_LIMIT = 80


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return [*lines, *("| " + " | ".join(row) + " |" for row in rows), ""]


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _ANSWER_LIMIT else text[: _ANSWER_LIMIT - 1] + "…"


def matrix_markdown(view: MatrixView) -> str:
    index = view.index
    lines = [
        f"## evalctl matrix · {cell(index.run_id)}",
        "",
        f"{len(view.columns)} cells · {len(view.rows)} cases",
        "",
    ]
    labels = [label for label, _ in view.columns[0].figures()] if view.columns else []
    figure_rows = []
    for column in view.columns:
        values = dict(column.figures())
        figure_rows.append(
            [f"**{cell(column.title)}**", cell(column.subtitle)]
            + [cell(values.get(label, values.get("skipped", "-"))) for label in labels]
        )
    lines += _table(["cell", "provider · model · prompt", *labels], figure_rows)
    header = ["case", *(cell(c.title) for c in view.columns)]
    differing = [r for r in view.rows if r.differs]
    if differing:
        lines += [f"### Where the cells disagree ({len(differing)})", ""]
        lines += _table(header, [_case_row(r) for r in differing])
    # Folded: a 200-case matrix would bury the summary on a job page.
    lines += [f"<details><summary>Every case ({len(view.rows)})</summary>", ""]
    lines += _table(header, [_case_row(r) for r in view.rows])
    lines += ["</details>", "", "Full answers: matrix.html beside this file."]
    return "\n".join(lines) + "\n"


def _case_row(row: Row) -> list[str]:
    shown = [cell(row.key)]
    for case in row.cases:
        if case is None:
            shown.append("-")
            continue
        failed = failed_checks(case)
        detail = f" ({cell(', '.join(failed))})" if failed else ""
        icon = _ICONS.get(case.status, "")
        shown.append(f"{icon} {case.status}{detail}: {cell(_short(answer(case)))}")
    return shown
