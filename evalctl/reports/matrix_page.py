"""One self-contained HTML page for a matrix run (`matrix.html`): a column per cell, headed
by its pass rate, tokens, cost and latency (and its gate verdict against a baseline), and a
row per case, under its row's values, with each cell's status, failure reasons, answer and
the prompt it sent side by side; a long answer shows its start and opens to the whole
text."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalctl.reports.kit.card import STATUS_COLOURS
from evalctl.reports.kit.elements import el
from evalctl.reports.kit.page import page, section
from evalctl.reports.matrix_view import (
    Column,
    MatrixView,
    Row,
    answer,
    failure_reasons,
    row_values,
    sent_prompt,
)
from evalctl.reports.run_page import case_badge
from evalctl.results.text import visible_controls
from evalctl.secrets import redact_before_cut

# An answer longer than this shows its start; the rest is one click away.
_PREVIEW = 160
# Each cell's column keeps room for a readable answer; a wider matrix widens the page.
_COLUMN_STYLE = "min-width: 240px; max-width: 480px"
_DIFFERS_STYLE = "background: #fff8c5"
_SMALL = "font-weight: normal; font-size: 12px"
# The header row, with each cell's figures, stays in view down a long table.
_STICKY = "position: sticky; top: 0"
# A failed check's reason, in the cell above the answer.
_REASON_STYLE = "white-space: pre-wrap; color: #cf222e"


def _header(column: Column) -> ET.Element:
    th = el("th", el("div", column.title), style=f"{_COLUMN_STYLE}; {_STICKY}")
    th.append(el("div", column.subtitle, class_="note", style=_SMALL))
    for label, value in column.figures():
        th.append(
            el(
                "div",
                el("span", f"{label} ", class_="note"),
                el("span", value),
                style=_SMALL,
            )
        )
    gate = column.gate()
    if gate is not None:
        word, tone, detail = gate
        th.append(
            el(
                "div",
                el("span", "gate ", class_="note"),
                _tag(word, tone),
                el("span", f" {detail}", class_="note"),
                style=_SMALL,
            )
        )
    return th


def _tag(text: str, tone: str) -> ET.Element:
    """A badge in a tone's colour (a gate verdict, a case's change)."""
    colour = STATUS_COLOURS.get(tone, "#6e7781")
    return el("span", text, class_="badge", style=f"background: {colour}")


def _answer(text: str) -> ET.Element:
    text = redact_before_cut(visible_controls(text), _PREVIEW)
    if len(text) <= _PREVIEW:
        return el("pre", text)
    preview = text[:_PREVIEW].rstrip() + " …"
    return el(
        "details",
        el(
            "summary",
            el("code", preview, style="white-space: pre-wrap"),
            el("span", f" show all {len(text):,} characters", class_="note"),
        ),
        el("pre", text),
    )


def _cell(row: Row, column: Column, index: int) -> ET.Element:
    case = row.cases[index]
    if case is None:
        return el("td", el("span", "not run", class_="note"))
    td = el("td", case_badge(case))
    change = column.changes.get(row.key)
    if change is not None:
        td.append(el("span", " "))
        td.append(_tag(change[0], change[1]))
    for reason in failure_reasons(case):
        td.append(el("div", visible_controls(reason), class_="note", style=_REASON_STYLE))
    td.append(_answer(answer(case)))
    prompt = sent_prompt(case)
    if prompt is not None:
        td.append(
            el(
                "details",
                el("summary", el("span", "prompt sent", class_="note")),
                el("pre", visible_controls(prompt)),
            )
        )
    return td


def _cases_table(view: MatrixView, rows: list[Row], *, anchors: bool) -> ET.Element:
    head = el("tr", el("th", "case", style=_STICKY), *(_header(c) for c in view.columns))
    body = el("tbody")
    for row in rows:
        tr = el(
            "tr",
            style=_DIFFERS_STYLE if row.differs else None,
            # `matrix.html#case-suite/id` links to a case's row.
            id=f"case-{row.key}" if anchors else None,
        )
        key = el("td", el("code", row.key))
        values = row.values
        if values:
            key.append(el("div", visible_controls(row_values(values)), class_="note"))
        if row.differs and anchors:  # the other table holds only such rows
            key.append(el("div", "cells disagree", class_="warn"))
        tr.append(key)
        for i, column in enumerate(view.columns):
            tr.append(_cell(row, column, i))
        body.append(tr)
    return el("table", el("thead", head), body)


def matrix_html(view: MatrixView) -> str:
    index = view.index
    differing = sum(1 for r in view.rows if r.differs)
    meta = (
        f"{len(view.columns)} cells · {len(view.rows)} cases · "
        f"{differing} on which the cells disagree · started {index.started_at}"
    )
    templates = [c.cell for c in view.columns if c.cell.prompt_template]
    prompts = None
    if templates:
        seen: dict[str, str] = {}
        for cell in templates:
            seen.setdefault(cell.prompt or "", cell.prompt_template or "")
        prompts = section(
            "Prompt variants",
            *(el("div", el("b", name), el("pre", visible_controls(t))) for name, t in seen.items()),
        )
    return page(
        f"evalctl matrix {index.run_id}",
        el("h1", f"Matrix {index.run_id}"),
        el("p", meta, class_="meta"),
        section(
            f"Where the cells disagree ({differing})",
            _cases_table(view, [r for r in view.rows if r.differs], anchors=False),
            id_="disagree",
        )
        if differing
        else None,
        section("Every case, side by side", _cases_table(view, view.rows, anchors=True), id_="all"),
        prompts,
    )
