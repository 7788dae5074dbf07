"""A matrix run in Markdown (`matrix.md`): each cell's figures (and gate verdict, against
baselines), then each case, with its row's values, its status, failure reasons and answer
per cell, side by side. Answers are cut to one table line; the HTML report (`matrix.html`)
and each cell's results hold them whole, with the prompts as sent."""

from __future__ import annotations

from evalctl.reports.markdown import cell, rate_cell
from evalctl.reports.matrix_view import (
    Column,
    MatrixView,
    Row,
    answer,
    failure_reasons,
    row_values,
)
from evalctl.secrets import redact_before_cut

_ICONS = {"pass": "✅", "fail": "❌", "error": "💥", "skipped": "⏭️", "flaky": "🎲"}
# Short enough that four cells side by side still read in a pull request.
_ANSWER_LIMIT = 80


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return [*lines, *("| " + " | ".join(row) + " |" for row in rows), ""]


def _short(text: str) -> str:
    text = redact_before_cut(" ".join(text.split()), _ANSWER_LIMIT)
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
    gated = any(c.gate() is not None for c in view.columns)
    figure_rows = []
    for column in view.columns:
        values = dict(column.figures())
        gate = column.gate()
        figure_rows.append(
            [f"**{cell(column.title)}**", cell(column.subtitle)]
            + [cell(values.get(label, values.get("skipped", "-"))) for label in labels]
            + ([cell(f"{gate[0]}: {gate[2]}") if gate else "-"] if gated else [])
        )
    lines += _table(
        ["cell", "provider · model · prompt", *labels, *(["gate"] if gated else [])], figure_rows
    )
    header = ["case", *(cell(c.title) for c in view.columns)]
    differing = [r for r in view.rows if r.differs]
    if differing:
        lines += [f"### Where the cells disagree ({len(differing)})", ""]
        lines += _table(header, [_case_row(r, view.columns) for r in differing])
    # Folded: a 200-case matrix would bury the summary on a job page.
    lines += [f"<details><summary>Every case ({len(view.rows)})</summary>", ""]
    lines += _table(header, [_case_row(r, view.columns) for r in view.rows])
    lines += ["</details>", "", "Full answers: matrix.html beside this file."]
    return "\n".join(lines) + "\n"


def _case_row(row: Row, columns: list[Column]) -> list[str]:
    values = row.values
    shown = [cell(row.key) + (f"<br>{cell(_short(row_values(values, 30)))}" if values else "")]
    for case, column in zip(row.cases, columns, strict=True):
        if case is None:
            shown.append("-")
            continue
        reasons = failure_reasons(case)
        detail = f" ({cell(_short('; '.join(reasons)))})" if reasons else ""
        change = column.changes.get(row.key)
        marked = f" **{cell(change[0])}**" if change else ""
        passed, runs = case.pass_counts()
        # A case run more than once shows its pass count, behind the icon of its rate.
        status = (
            rate_cell(passed, runs) if runs > 1 else f"{_ICONS.get(case.status, '')} {case.status}"
        )
        shown.append(f"{status}{marked}{detail}: {cell(_short(answer(case)))}")
    return shown
