"""Summary cards and status badges, in the status colours every page shares."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalctl.reports.kit.elements import el

STATUS_COLOURS = {
    "pass": "#1a7f37",
    "fail": "#cf222e",
    "error": "#8250df",
    "flaky": "#bf8700",
    "skipped": "#6e7781",
    "n/a": "#6e7781",
}


def badge(status: str) -> ET.Element:
    colour = STATUS_COLOURS.get(status, "#6e7781")
    return el("span", status, class_="badge", style=f"background: {colour}")


def card(label: str, value: str, colour: str | None = None) -> ET.Element:
    style = f"color: {colour}" if colour else None
    return el(
        "div",
        el("div", value, class_="v", style=style),
        el("div", label, class_="k"),
        class_="card",
    )
