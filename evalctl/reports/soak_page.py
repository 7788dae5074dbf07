"""The soak's HTML page and its standalone memory chart (memory.svg), for
`evalctl soak` and `evalctl report FILE --html` on kind "soak".

Built on the same element tree, escaping serializer and inline CSS as a run's page: no
script, nothing fetched.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from evalctl.reports.kit.card import STATUS_COLOURS, card
from evalctl.reports.kit.elements import SVG_NS, el
from evalctl.reports.kit.page import page, section
from evalctl.reports.kit.table import Cell, num, table
from evalctl.reports.line_chart import Chart, Guide, Series, line_chart
from evalctl.stability.describe import (
    MIB,
    environment_rows,
    mib,
    ms,
    pct,
    per_request,
    signed_mib,
)
from evalctl.stability.models import SoakResult
from evalctl.stability.verdict import fit_line

VERDICT_COLOURS = {
    "no leak": STATUS_COLOURS["pass"],
    "leak": STATUS_COLOURS["fail"],
    "inconclusive": STATUS_COLOURS["flaky"],
}
SERIES_COLOURS = {"RSS": "#6e7781", "USS": "#bf8700", "anon": "#0969da"}


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


def environment_table(rows: Sequence[tuple[str, str]]) -> ET.Element:
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
        section("Environment", environment_table(environment_rows(env)), id_="environment"),
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
