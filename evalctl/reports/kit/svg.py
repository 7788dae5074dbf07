"""The frame every chart is drawn in: an inline <svg> with its size, an accessible label and
a <title> a browser shows on hover."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalctl.reports.kit.elements import SVG_NS, el


def frame(width: int, height: int, *, label: str, title: str) -> ET.Element:
    """An empty chart of `width` x `height` pixels; `label` is read out, `title` hovers."""
    svg = el(
        "svg",
        xmlns=SVG_NS,
        width=width,
        height=height,
        viewBox=f"0 0 {width} {height}",
        role="img",
        aria_label=label,
    )
    svg.append(el("title", title))
    return svg
