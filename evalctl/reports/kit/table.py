"""Tables: header row, body rows of text or ready-made cells."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from evalctl.reports.kit.elements import el

Cell = ET.Element | str  # a string becomes a <td>; an element must be the <td> itself


def table(header: Sequence[str], rows: Sequence[Sequence[Cell]]) -> ET.Element:
    head = el("thead", el("tr", *(el("th", h) for h in header)))
    body = el("tbody")
    for row in rows:
        tr = el("tr")
        for value in row:
            tr.append(value if isinstance(value, ET.Element) else el("td", value))
        body.append(tr)
    return el("table", head, body)


def num(text: str) -> ET.Element:
    return el("td", text, class_="num")
