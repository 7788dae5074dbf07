"""HTML and SVG views of stability results: the soak's memory chart and the pages that
`evalctl report FILE --html` renders for kinds "soak" and "crash-test".

Built on evalctl.results.html (element tree, one escaping serializer, inline CSS, no
script, nothing fetched), so these pages are as self-contained as a run's.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass, field

from evalctl.errors import BadInputError
from evalctl.results.document import Document
from evalctl.results.html import (
    STATUS_COLOURS,
    SVG_NS,
    Cell,
    card,
    el,
    num,
    page,
    section,
    table,
)
from evalctl.stability.describe import (
    MIB,
    environment_rows,
    mib,
    ms,
    pct,
    per_request,
    signed_mib,
)
from evalctl.stability.models import (
    CrashResult,
    SoakResult,
    crash_from_document,
    soak_from_document,
)
from evalctl.stability.verdict import fit_line

VERDICT_COLOURS = {
    "no leak": STATUS_COLOURS["pass"],
    "leak": STATUS_COLOURS["fail"],
    "inconclusive": STATUS_COLOURS["flaky"],
}
SERIES_COLOURS = {"RSS": "#6e7781", "USS": "#bf8700", "anon": "#0969da"}


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
    svg = el(
        "svg",
        xmlns=SVG_NS,
        width=width,
        height=height,
        viewBox=f"0 0 {width} {height}",
        role="img",
        aria_label=chart.title,
    )
    svg.append(el("title", chart.title))
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


# ---------------------------------------------------------------- the soak


def _mib_points(result: SoakResult, attr: str) -> list[tuple[float, float]]:
    return [(float(s.request), getattr(s, attr) / MIB) for s in result.samples]


def anon_chart(result: SoakResult) -> Chart:
    """The judged series: anonymous memory, with warm-up, baseline, threshold and the fit."""
    v = result.verdict
    warmup = result.settings.warmup
    series = [Series("anonymous memory", SERIES_COLOURS["anon"], _mib_points(result, "anon_bytes"))]
    guides: list[Guide] = []
    window = [s for s in result.samples if s.request >= warmup]
    if v.baseline_bytes is not None and len(window) >= 2:
        fit = fit_line([float(s.request) for s in window], [float(s.anon_bytes) for s in window])
        x0, x1 = float(window[0].request), float(window[-1].request)
        series.append(
            Series(
                f"least-squares fit (R² {fit.r_squared:.2f})",
                "#cf222e",
                [(x, (fit.intercept + fit.slope * x) / MIB) for x in (x0, x1)],
                dashed=True,
            )
        )
        guides.append(Guide("baseline", v.baseline_bytes / MIB, "#59636e"))
        limit = v.baseline_bytes * (1 + v.threshold_pct / 100)
        guides.append(Guide(f"baseline +{v.threshold_pct:g}%", limit / MIB, "#cf222e"))
    return Chart(
        title="Anonymous memory (judged)",
        series=series,
        guides=guides,
        shade=(0.0, float(warmup), "warm-up") if warmup > 0 else None,
    )


def all_series_chart(result: SoakResult) -> Chart:
    return Chart(
        title="RSS, USS and anonymous memory",
        series=[
            Series("RSS", SERIES_COLOURS["RSS"], _mib_points(result, "rss_bytes")),
            # USS runs just above anon on a small model: wide and pale, so both show.
            Series("USS", SERIES_COLOURS["USS"], _mib_points(result, "uss_bytes"), width=6),
            Series("anon", SERIES_COLOURS["anon"], _mib_points(result, "anon_bytes")),
        ],
        zero_based=True,
    )


def memory_chart_svg(result: SoakResult) -> str:
    """Both charts stacked in one standalone SVG document (memory.svg)."""
    width, height = 760, 280
    root = el(
        "svg",
        xmlns=SVG_NS,
        width=width,
        height=2 * height,
        viewBox=f"0 0 {width} {2 * height}",
    )
    root.append(el("style", "text { font: 11px sans-serif; fill: #59636e; }"))
    for i, chart in enumerate((anon_chart(result), all_series_chart(result))):
        panel = line_chart(chart, x_label="requests completed", width=width, height=height)
        panel.set("y", str(i * height))
        root.append(panel)
    # ElementTree escapes text and attributes itself; this file is plain SVG, not a page.
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _env_table(rows: Sequence[tuple[str, str]]) -> ET.Element:
    return table(["", ""], [[label, el("td", el("code", value))] for label, value in rows])


def soak_page(result: SoakResult) -> str:
    v = result.verdict
    env = result.environment
    colour = VERDICT_COLOURS[v.verdict]
    baseline = v.baseline_bytes
    notes: list[ET.Element | None] = []
    if result.error:
        notes.append(el("p", f"stopped early: {result.error}", class_="warn"))
    if result.interrupted:
        notes.append(el("p", "interrupted: the samples so far are kept", class_="warn"))
    if not result.daemon.started_by_soak:
        notes.append(
            el(
                "p",
                f"the daemon was already running ({result.daemon.requests_served_before} "
                "requests served before the soak)",
                class_="note",
            )
        )
    cards = [
        card("verdict", v.verdict, colour),
        card("anon growth after warm-up", pct(v.growth_pct)),
        card("slope", per_request(v.slope_bytes_per_request)),
        card("R²", "-" if v.r_squared is None else f"{v.r_squared:.2f}"),
        card("slope, second half", per_request(v.late_slope_bytes_per_request)),
        card("threshold", f"{v.threshold_pct:g}%"),
        card("baseline (anon)", "-" if baseline is None else mib(baseline)),
        card("final (anon)", "-" if v.final_bytes is None else mib(v.final_bytes)),
        card("requests", f"{len(result.requests)} / {result.settings.requests}"),
        card("warm-up", str(result.settings.warmup)),
    ]
    rows: list[list[Cell]] = []
    for s in result.samples:
        delta = "-" if baseline is None else signed_mib(s.anon_bytes - baseline)
        rows.append(
            [
                num(str(s.request)),
                num(mib(s.rss_bytes)),
                num(mib(s.uss_bytes)),
                num(mib(s.anon_bytes)),
                num(delta),
                "warm-up" if s.request < result.settings.warmup else "",
            ]
        )
    request_rows: list[list[Cell]] = [
        [
            num(str(r.index)),
            el("td", el("code", r.case)),
            num(ms(r.latency_ms)),
            r.stop_reason,
            num(str(r.output_tokens)),
            r.error or "",
        ]
        for r in result.requests
    ]
    return page(
        f"evalctl soak · {result.soak_id}",
        el("h1", f"evalctl soak {result.soak_id}"),
        el(
            "p",
            f"{env.model_name} · daemon pid {result.daemon.pid} · started {result.started_at}"
            f" · finished {result.finished_at or '-'} · {env.host}",
            class_="meta",
        ),
        *notes,
        section(
            "Verdict",
            el("div", *cards, class_="cards"),
            el("p", v.reason, class_="note"),
            id_="verdict",
        ),
        section(
            "Memory over requests",
            line_chart(anon_chart(result), x_label="requests completed"),
            line_chart(all_series_chart(result), x_label="requests completed"),
            el(
                "p",
                "RSS and USS include the mmap'd model file; the verdict is judged on anonymous "
                "memory only (runbooks/soak.md).",
                class_="note",
            ),
            id_="chart",
        ),
        section(
            f"Samples ({len(result.samples)})",
            table(["request #", "RSS", "USS", "anon", "Δ anon vs baseline", ""], rows),
            id_="samples",
        ),
        section("Environment", _env_table(environment_rows(env)), id_="environment"),
        section(
            f"Requests ({len(result.requests)})",
            el(
                "details",
                el("summary", "every request"),
                table(["#", "case", "latency", "stop", "tokens out", "error"], request_rows),
            ),
            id_="requests",
        ),
    )


# ---------------------------------------------------------------- the crash-test


def crash_page(result: CrashResult) -> str:
    s = result.summary
    verdict, colour = (
        ("PASSED", STATUS_COLOURS["pass"]) if result.passed else ("FAILED", STATUS_COLOURS["fail"])
    )
    cards = [
        card("result", verdict, colour),
        card("recovered", f"{s.recovered} / {s.kills}"),
        card("detection p50", ms(s.detection_ms.p50)),
        card("detection max", ms(s.detection_max_ms)),
        card("recovery p50", ms(s.recovery_ms.p50)),
        card("recovery max", ms(s.recovery_max_ms)),
        card("probe request", ms(result.probe.latency_ms)),
    ]
    rows: list[list[Cell]] = [
        [
            num(str(k.n)),
            k.mode,
            num(str(k.killed_pid)),
            k.failure_seen,
            num(ms(k.detection_ms)),
            "yes" if k.stale_socket_left else "no",
            "yes" if k.lock_released else "no",
            num("-" if k.new_pid is None else str(k.new_pid)),
            num(ms(k.recovery_ms)),
            el(
                "td",
                el(
                    "span",
                    "recovered" if k.recovered else "FAILED",
                    style=f"color: {STATUS_COLOURS['pass' if k.recovered else 'fail']}",
                ),
                f" {k.error}" if k.error else None,
            ),
        ]
        for k in result.kills
    ]
    header = [
        "kill",
        "mode",
        "killed pid",
        "client saw",
        "detection",
        "stale socket",
        "lock freed",
        "new pid",
        "recovery",
        "result",
    ]
    return page(
        f"evalctl crash-test · {result.crash_id}",
        el("h1", f"evalctl crash-test {result.crash_id}"),
        el(
            "p",
            f"{result.environment.model_name} · started {result.started_at} · finished "
            f"{result.finished_at or '-'} · {result.environment.host}",
            class_="meta",
        ),
        el("p", f"stopped early: {result.error}", class_="warn") if result.error else None,
        section("Result", el("div", *cards, class_="cards"), id_="result"),
        section(f"Kills ({len(result.kills)})", table(header, rows), id_="kills"),
        section("Environment", _env_table(environment_rows(result.environment)), id_="environment"),
    )


# ---------------------------------------------------------------- `evalctl report` by kind


def _no_baseline(baseline: Document | None, kind: str) -> None:
    if baseline is not None:
        raise BadInputError(
            f"--baseline applies to run results, not to a {kind} result", field="--baseline"
        )


def soak_report(doc: Document, baseline: Document | None) -> str:
    _no_baseline(baseline, "soak")
    return soak_page(soak_from_document(doc))


def crash_report(doc: Document, baseline: Document | None) -> str:
    _no_baseline(baseline, "crash-test")
    return crash_page(crash_from_document(doc))
