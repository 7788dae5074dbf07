"""The geometry of the trend charts: each a line over runs (pass rate, latency, tokens, cost),
with a shaded band where the figure has an interval. Only numbers and labels come out of
here; the template draws them, so every label (a run id, a commit) is escaped like the rest
of the page."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

WIDTH = 760
HEIGHT = 220
# Room for the y axis labels on the left and the x labels below.
_LEFT, _RIGHT, _TOP, _BOTTOM = 56, 16, 14, 34


@dataclass(frozen=True)
class Dot:
    x: float
    y: float
    tip: str  # the run, the commit and the value, shown on hover


@dataclass(frozen=True)
class Line:
    name: str
    colour: str
    path: str  # SVG points "x,y x,y ..." (numbers only)
    dots: list[Dot]
    dashed: bool = False


@dataclass(frozen=True)
class Tick:
    at: float
    label: str


@dataclass(frozen=True)
class Chart:
    title: str
    unit: str
    lines: list[Line]
    band: str | None  # the interval's polygon, SVG points
    y_ticks: list[Tick]
    x_ticks: list[Tick]
    width: int = WIDTH
    height: int = HEIGHT
    plot: tuple[float, float, float, float] = (_LEFT, _TOP, WIDTH - _RIGHT, HEIGHT - _BOTTOM)
    empty: bool = False
    legend: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class SeriesSpec:
    name: str
    colour: str
    values: Sequence[float | None]
    dashed: bool = False


def _nice_step(span: float, ticks: int = 4) -> float:
    raw = span / ticks if span > 0 else 1.0
    magnitude = 10.0 ** math.floor(math.log10(raw))
    for factor in (1.0, 2.0, 2.5, 5.0, 10.0):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10.0 * magnitude


def _fmt(value: float, unit: str) -> str:
    if unit == "%":
        return f"{value:.0f}%"
    if unit == "$":
        return f"${value:.4g}"
    if abs(value) >= 10_000:
        return f"{value / 1000:.0f}k"
    return f"{value:.4g}"


def line_chart(
    title: str,
    unit: str,
    runs: Sequence[str],
    series: Sequence[SeriesSpec],
    *,
    band: Sequence[tuple[float, float] | None] | None = None,
    fixed: tuple[float, float] | None = None,
    tips: Sequence[str] | None = None,
) -> Chart:
    """A chart of `series` over `runs` (each run's short label under the axis, one x
    position each, oldest first; a None value is a gap), `band` the interval drawn behind
    them, `fixed` the y range (pass rate: 0..100), `tips` each run's hover text."""
    x0, y0, x1, y1 = (_LEFT, _TOP, WIDTH - _RIGHT, HEIGHT - _BOTTOM)
    values = [v for s in series for v in s.values if v is not None]
    values += [b for pair in (band or []) if pair is not None for b in pair]
    if not runs or not values:
        return Chart(title, unit, [], None, [], [], empty=True)
    low, high = fixed if fixed else (min(0.0, min(values)), max(values))
    if high <= low:
        high = low + 1.0
    step = _nice_step(high - low)
    if not fixed:
        high = math.ceil(high / step) * step
    n = len(runs)

    def x_at(i: int) -> float:
        return x0 + (x1 - x0) * (i / (n - 1) if n > 1 else 0.5)

    def y_at(v: float) -> float:
        return y1 - (y1 - y0) * (v - low) / (high - low)

    lines = []
    for s in series:
        dots = [
            Dot(round(x_at(i), 1), round(y_at(v), 1), f"{(tips or runs)[i]}: {_fmt(v, unit)}")
            for i, v in enumerate(s.values)
            if v is not None
        ]
        path = " ".join(f"{d.x},{d.y}" for d in dots)
        lines.append(Line(s.name, s.colour, path, dots, s.dashed))
    polygon = None
    if band:
        upper = [(x_at(i), y_at(b[1])) for i, b in enumerate(band) if b is not None]
        lower = [(x_at(i), y_at(b[0])) for i, b in enumerate(band) if b is not None]
        if upper:
            polygon = " ".join(f"{x:.1f},{y:.1f}" for x, y in [*upper, *reversed(lower)])
    y_ticks = []
    tick = low
    while tick <= high + step / 1000:
        y_ticks.append(Tick(round(y_at(tick), 1), _fmt(tick, unit)))
        tick += step
    # At most about six run labels under the axis; every run still has its dot and tip.
    every = max(1, math.ceil(n / 6))
    x_ticks = [Tick(round(x_at(i), 1), runs[i]) for i in range(0, n, every)]
    legend = [(s.name, s.colour) for s in series]
    return Chart(title, unit, lines, polygon, y_ticks, x_ticks, legend=legend)
