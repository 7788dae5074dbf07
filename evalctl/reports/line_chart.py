"""An inline SVG line chart (axes with ticks, legend, shading, guide lines): the soak's
memory charts are drawn with it."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

from evalctl.reports.kit.elements import el
from evalctl.reports.kit.svg import frame

# ---------------------------------------------------------------- a line chart


@dataclass
class Series:
    name: str
    colour: str
    points: list[tuple[float, float]]
    dashed: bool = False
    # Drawn wider than the default 2 so a series that another one covers still shows.
    width: float = 2.0


@dataclass
class Guide:
    """A labelled horizontal line (a baseline, a threshold)."""

    label: str
    y: float
    colour: str = "#cf222e"


@dataclass
class Chart:
    title: str
    series: list[Series]
    y_unit: str = "MiB"
    guides: list[Guide] = field(default_factory=list)
    # (x0, x1) shaded and labelled, e.g. the warm-up requests.
    shade: tuple[float, float, str] | None = None
    zero_based: bool = False


def _nice_step(span: float, ticks: int = 5, *, integer: bool = False) -> float:
    raw = span / ticks if span > 0 else 1.0
    if integer and raw < 1:
        return 1.0
    magnitude = 10.0 ** math.floor(math.log10(raw))
    # Request counts are whole numbers: no 2.5 steps on that axis.
    factors = (1.0, 2.0, 5.0, 10.0) if integer else (1.0, 2.0, 2.5, 5.0, 10.0)
    for factor in factors:
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10.0 * magnitude


def line_chart(chart: Chart, *, x_label: str, width: int = 760, height: int = 280) -> ET.Element:
    """An inline SVG line chart: axes with ticks, a legend, optional shading and guides."""
    xs = [x for s in chart.series for x, _ in s.points]
    ys = [y for s in chart.series for _, y in s.points] + [g.y for g in chart.guides]
    svg = frame(width, height, label=chart.title, title=chart.title)
    if not xs:
        svg.append(el("text", "no samples", x=width / 2, y=height / 2, text_anchor="middle"))
        return svg
    left, right, top, bottom = 64, 16, 40, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    x_lo, x_hi = min(xs), max(xs)
    if x_hi == x_lo:
        x_hi = x_lo + 1
    y_lo = 0.0 if chart.zero_based else min(ys)
    y_hi = max(ys)
    pad = (y_hi - y_lo) * 0.08 or max(abs(y_hi) * 0.01, 1.0)
    y_hi += pad
    if not chart.zero_based:
        y_lo -= pad
    step = _nice_step(y_hi - y_lo)
    y_lo = math.floor(y_lo / step) * step
    y_hi = math.ceil(y_hi / step) * step

    def px(x: float) -> float:
        return left + plot_w * (x - x_lo) / (x_hi - x_lo)

    def py(y: float) -> float:
        return top + plot_h * (1 - (y - y_lo) / (y_hi - y_lo))

    svg.append(el("text", chart.title, x=left, y=16, style="font-weight: 600"))
    if chart.shade is not None:
        x0, x1, label = chart.shade
        if x1 > x0:
            svg.append(
                el(
                    "rect",
                    el("title", label),
                    x=f"{px(x0):.1f}",
                    y=top,
                    width=f"{px(x1) - px(x0):.1f}",
                    height=plot_h,
                    fill="#f6f8fa",
                )
            )
            svg.append(el("text", label, x=f"{px(x0) + 4:.1f}", y=top + 12))
    tick = y_lo
    while tick <= y_hi + step / 2:
        tick_y = f"{py(tick):.1f}"
        svg.append(el("line", x1=left, x2=left + plot_w, y1=tick_y, y2=tick_y, stroke="#eaeef2"))
        svg.append(el("text", f"{tick:g}", x=left - 6, y=f"{py(tick) + 4:.1f}", text_anchor="end"))
        tick += step
    x_step = _nice_step(x_hi - x_lo, 8, integer=True)
    x_tick = math.ceil(x_lo / x_step) * x_step
    while x_tick <= x_hi:
        svg.append(
            el(
                "text",
                f"{x_tick:g}",
                x=f"{px(x_tick):.1f}",
                y=top + plot_h + 16,
                text_anchor="middle",
            )
        )
        x_tick += x_step
    axis = f"M{left} {top} V{top + plot_h} H{left + plot_w}"
    svg.append(el("path", d=axis, stroke="#59636e", fill="none"))
    svg.append(el("text", x_label, x=left + plot_w / 2, y=height - 6, text_anchor="middle"))
    svg.append(
        el(
            "text",
            chart.y_unit,
            x=14,
            y=top + plot_h / 2,
            text_anchor="middle",
            transform=f"rotate(-90 14 {top + plot_h / 2:.1f})",
        )
    )
    for guide in chart.guides:
        guide_y = f"{py(guide.y):.1f}"
        svg.append(
            el(
                "line",
                el("title", f"{guide.label}: {guide.y:.2f} {chart.y_unit}"),
                x1=left,
                x2=left + plot_w,
                y1=guide_y,
                y2=guide_y,
                stroke=guide.colour,
                stroke_dasharray="2 3",
            )
        )
        svg.append(
            el(
                "text",
                guide.label,
                x=left + plot_w - 4,
                y=f"{py(guide.y) - 4:.1f}",
                text_anchor="end",
            )
        )
    for series in chart.series:
        if not series.points:
            continue
        path = " ".join(
            f"{'M' if i == 0 else 'L'}{px(x):.1f} {py(y):.1f}"
            for i, (x, y) in enumerate(series.points)
        )
        svg.append(
            el(
                "path",
                el("title", series.name),
                d=path,
                stroke=series.colour,
                fill="none",
                stroke_width=f"{series.width:g}",
                stroke_opacity="0.5" if series.width > 2 else None,
                stroke_dasharray="6 4" if series.dashed else None,
            )
        )
        if not series.dashed:
            for x, y in series.points:
                svg.append(
                    el(
                        "circle",
                        el("title", f"{series.name} after request {x:g}: {y:.2f} {chart.y_unit}"),
                        cx=f"{px(x):.1f}",
                        cy=f"{py(y):.1f}",
                        r=2.5,
                        fill=series.colour,
                    )
                )
    legend_x = left + 160
    for series in chart.series:
        svg.append(
            el(
                "rect",
                x=legend_x,
                y=26,
                width=10,
                height=3 if series.dashed else 10,
                fill=series.colour,
            )
        )
        svg.append(el("text", series.name, x=legend_x + 14, y=35))
        legend_x += 18 + 7 * len(series.name)
    return svg
