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


def rate_badge(passed: int, runs: int, tone: str, title: str | None = None) -> ET.Element:
    """`2/5` in the colour of its rate (`tone`: a status key), where a sampled case or check is
    shown: a pass/fail badge would hide that it passed some of its samples."""
    colour = STATUS_COLOURS.get(tone, "#6e7781")
    return el(
        "span", f"{passed}/{runs}", class_="badge rate", style=f"background: {colour}", title=title
    )


def card(label: str, value: str, colour: str | None = None) -> ET.Element:
    style = f"color: {colour}" if colour else None
    return el(
        "div",
        el("div", value, class_="v", style=style),
        el("div", label, class_="k"),
        class_="card",
    )
