"""The run page's latency histogram, an inline SVG."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from decimal import Decimal

from evalctl.reports.kit.elements import el
from evalctl.reports.kit.svg import frame


def histogram(
    values: Sequence[float],
    *,
    unit: str = "ms",
    markers: Sequence[tuple[str, float]] = (),
    width: int = 720,
    height: int = 240,
) -> ET.Element:
    """An inline SVG histogram of `values`, with labelled vertical `markers` (e.g. p50)."""
    if not values:
        return el("p", "no values to plot", class_="note")
    lo, hi = min(values), max(values)
    bins = 1 if hi == lo else max(1, min(30, math.ceil(math.sqrt(len(values)))))
    step = (hi - lo) / bins if hi > lo else 1.0
    counts = [0] * bins
    for value in values:
        counts[bin_index(value, lo, hi, bins)] += 1
    left, right, top, bottom = 44, 16, 34, 24
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max(counts)

    def x_of(value: float) -> float:
        return left + (plot_w * (value - lo) / (hi - lo) if hi > lo else plot_w / 2)

    svg = frame(
        width,
        height,
        label=f"histogram of {len(values)} values",
        title=f"distribution of {len(values)} values ({unit})",
    )
    # One distinct value: a single narrow bar in the middle, not a slab across the plot.
    bar_w = plot_w / bins if hi > lo else plot_w / 5
    first_x = left if hi > lo else left + (plot_w - bar_w) / 2
    for i, count in enumerate(counts):
        bar_h = plot_h * count / peak if peak else 0
        start = lo + i * step
        end = start + step if hi > lo else hi
        svg.append(
            el(
                "rect",
                el("title", f"{_num(start)}-{_num(end)} {unit}: {count}"),
                x=f"{first_x + i * bar_w + 1:.1f}",
                y=f"{top + plot_h - bar_h:.1f}",
                width=f"{max(bar_w - 2, 1):.1f}",
                height=f"{bar_h:.1f}",
                fill="#0969da",
            )
        )
    axis = f"M{left} {top} V{top + plot_h} H{left + plot_w}"
    svg.append(el("path", d=axis, stroke="#59636e", fill="none"))
    svg.append(el("text", str(peak), x=left - 6, y=top + 10, text_anchor="end"))
    svg.append(el("text", "0", x=left - 6, y=top + plot_h, text_anchor="end"))
    ends = ((lo, "start"), (hi, "end")) if hi > lo else ((lo, "middle"),)
    for value, anchor in ends:
        svg.append(
            el(
                "text",
                f"{_num(value)} {unit}",
                x=f"{x_of(value):.1f}",
                y=top + plot_h + 16,
                text_anchor=anchor,
            )
        )
    previous: float | None = None
    for label, value in markers:
        x_value = x_of(value)
        x = f"{x_value:.1f}"
        # Labels above the plot; a second one that would overlap the first moves up a line.
        y = top - 18 if previous is not None and abs(x_value - previous) < 36 else top - 6
        previous = x_value
        svg.append(
            el(
                "line",
                x1=x,
                x2=x,
                y1=top,
                y2=top + plot_h,
                stroke="#cf222e",
                stroke_dasharray="4 3",
            )
        )
        svg.append(el("text", label, x=x, y=y, text_anchor="middle"))
    return svg


def bin_index(value: float, lo: float, hi: float, bins: int) -> int:
    """The bin of `value` among `bins` equal bins from `lo` to `hi`, the last one closed.

    Computed in decimal on the shortest representation of each float (what a reader sees),
    because binary floating point misplaces values that sit on an edge:
    `int((0.3 - 0.2) / 0.1)` is 0, so 0.3 would land in the bin that ends at 0.3.
    """
    if hi <= lo:
        return 0
    low, high, point = Decimal(repr(lo)), Decimal(repr(hi)), Decimal(repr(value))
    index = int((point - low) * bins / (high - low))
    return min(bins - 1, max(0, index))


def _num(value: float) -> str:
    # Scripted and cached answers take well under 10 ms; "0 ms" for all of them says nothing.
    return f"{value:.1f}" if abs(value) < 10 else f"{value:.0f}"
