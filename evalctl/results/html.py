"""One self-contained HTML page for a run: `evalctl report RESULTS --html FILE`.

Self-contained means the file is the whole report: inline CSS, inline SVG, no script, no
font, image or stylesheet fetched from anywhere. It has to open from a CI artifact, an
e-mail attachment or an air-gapped machine, and must not phone home when it does.

The page is built as an element tree and written by a small serializer rather than by
string templates: every text and attribute goes through one escaping function, so a case
key or a model answer holding `<script>` cannot inject markup. The output is well-formed
XML as well as HTML (void elements self-closed, every other element closed explicitly), so
tests can check it with a strict XML parser.

The generic parts (`page`, `section`, `histogram`, `serialize`) are meant to be shared by
renderers of other result kinds (a soak report's memory chart, say); `run_page` is the run.
"""

from __future__ import annotations

import importlib
import json
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

from evalctl.baselines.compare import CaseChange, CheckChange, Comparison
from evalctl.chat import Message
from evalctl.errors import BadInputError
from evalctl.results.document import Document
from evalctl.results.models import CaseResult, CheckResult, RunResult, ToolCallRecord, TurnRecord
from evalctl.results.summary import SCORED
from evalctl.results.text import visible_controls

_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_VALUE_LIMIT = 4000
SVG_NS = "http://www.w3.org/2000/svg"  # a namespace name, never fetched
XHTML_NS = "http://www.w3.org/1999/xhtml"

STATUS_COLOURS = {
    "pass": "#1a7f37",
    "fail": "#cf222e",
    "error": "#8250df",
    "flaky": "#bf8700",
    "skipped": "#6e7781",
    "n/a": "#6e7781",
}

# No `<` or `&` anywhere in the CSS: <style> is raw text in HTML but parsed text in XML, and
# the page must mean the same in both (the serializer checks this).
CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
       color: #1f2328; background: #ffffff; margin: 0; padding: 24px 32px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 10px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
.meta { color: #59636e; margin: 0 0 16px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; }
.card { border: 1px solid #d0d7de; border-radius: 6px; padding: 8px 14px; min-width: 110px; }
.card .v { font-size: 20px; font-weight: 600; }
.card .k { color: #59636e; font-size: 12px; }
table { border-collapse: collapse; width: 100%; margin: 6px 0 12px; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #d0d7de;
         vertical-align: top; }
th { background: #f6f8fa; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
            font-size: 12px; }
pre { white-space: pre-wrap; word-break: break-word; margin: 2px 0; }
.badge { display: inline-block; color: #ffffff; border-radius: 10px; padding: 0 8px;
         font-size: 12px; font-weight: 600; }
.verdict { font-weight: 700; font-size: 16px; }
.note { color: #59636e; }
.warn { color: #9a6700; }
details summary { cursor: pointer; }
.turn { border-left: 3px solid #d0d7de; padding-left: 10px; margin: 8px 0; }
.msg { margin: 4px 0; }
h4 { font-size: 13px; margin: 10px 0 4px; }
svg text { font: 11px system-ui, sans-serif; fill: #59636e; }
"""


# ---------------------------------------------------------------- building and serializing


def el(tag: str, *children: ET.Element | str | None, **attrs: Any) -> ET.Element:
    """An element with text/element children; `class_` and `data_x` spell `class`, `data-x`."""
    element = ET.Element(tag, {_attr_name(k): str(v) for k, v in attrs.items() if v is not None})
    last: ET.Element | None = None
    for child in children:
        if child is None:
            continue
        if isinstance(child, str):
            if last is None:
                element.text = (element.text or "") + child
            else:
                last.tail = (last.tail or "") + child
        else:
            element.append(child)
            last = child
    return element


def _attr_name(name: str) -> str:
    return name.rstrip("_").replace("_", "-")


def _escape(text: str, *, quote: bool) -> str:
    text = _NOT_XML.sub("\ufffd", text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace('"', "&quot;") if quote else text


def serialize(root: ET.Element) -> str:
    out: list[str] = ["<!DOCTYPE html>\n"]
    _write(root, out)
    out.append("\n")
    return "".join(out)


def _write(element: ET.Element, out: list[str]) -> None:
    tag = str(element.tag)
    attrs = "".join(f' {k}="{_escape(v, quote=True)}"' for k, v in element.attrib.items())
    if tag in _VOID:
        if element.text or len(element):
            raise ValueError(f"<{tag}> is a void element and cannot have content")
        out.append(f"<{tag}{attrs} />")
        return
    out.append(f"<{tag}{attrs}>")
    if element.text:
        if tag == "style":
            if "<" in element.text or "&" in element.text:
                raise ValueError("CSS must not contain '<' or '&' (it must parse as XML too)")
            out.append(element.text)
        else:
            out.append(_escape(element.text, quote=False))
    for child in element:
        _write(child, out)
        if child.tail:
            out.append(_escape(child.tail, quote=False))
    out.append(f"</{tag}>")


def page(title: str, *body: ET.Element | None) -> str:
    """The whole document: head with inline CSS, then `body`."""
    head = el(
        "head",
        el("meta", charset="utf-8"),
        el("meta", name="viewport", content="width=device-width, initial-scale=1"),
        el("title", title),
        el("style", CSS),
    )
    return serialize(el("html", head, el("body", *body), xmlns=XHTML_NS, lang="en"))


def section(title: str, *children: ET.Element | str | None, id_: str | None = None) -> ET.Element:
    return el("section", el("h2", title), *children, id=id_)


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


# ---------------------------------------------------------------- the latency histogram


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

    svg = el(
        "svg",
        xmlns=SVG_NS,
        width=width,
        height=height,
        viewBox=f"0 0 {width} {height}",
        role="img",
        aria_label=f"histogram of {len(values)} values",
    )
    svg.append(el("title", f"distribution of {len(values)} values ({unit})"))
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


# ---------------------------------------------------------------- the run page


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _VALUE_LIMIT else text[:_VALUE_LIMIT] + " …"


def _pct(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def _passed(case: CaseResult) -> str:
    passed, runs = case.pass_counts()
    if runs == 0:
        return "-"
    text = f"{passed}/{runs}"
    if runs > 1 and case.pass_ci_low is not None and case.pass_ci_high is not None:
        text += f" ({case.pass_ci_low:.0%}-{case.pass_ci_high:.0%})"
    return text


def _pre(value: Any) -> ET.Element:
    return el("pre", visible_controls(_value(value)))


def _check_rows(checks: Sequence[CheckResult]) -> list[list[Cell]]:
    return [
        [
            c.name,
            el("td", badge(c.status)),
            el("td", _pre(c.expected)),
            el("td", _pre(c.actual)),
            el("td", _pre(c.message)),
        ]
        for c in checks
    ]


_CHECK_HEADER = ["check", "status", "expected", "actual", "reason"]
# Cases whose transcript the page shows: those a reader has to debug.
_WITH_TRANSCRIPT = ("fail", "error", "flaky")


def _detail(case: CaseResult) -> ET.Element:
    td = el("td")
    if case.error:
        prefix = "server crashed: " if case.server_crashed else ""
        td.append(_pre(prefix + case.error))
    if case.skip_reason:
        td.append(el("span", case.skip_reason, class_="note"))
    failed = [c for c in case.checks if c.failed]
    if failed:
        # The reason of each failed check is shown, not only its name: the reason is what
        # says "all 4 extract_pattern calls were rejected" and why.
        for c in failed:
            td.append(el("div", el("b", c.name), ": ", visible_controls(c.message or "failed")))
        td.append(
            el(
                "details",
                el("summary", "expected / actual"),
                table(_CHECK_HEADER, _check_rows(failed)),
            )
        )
    na = [c for c in case.checks if c.not_applicable]
    if na:
        td.append(el("div", "n/a: " + ", ".join(c.name for c in na), class_="note"))
    if case.status in _WITH_TRANSCRIPT:
        # No in-page link: the page holds no href at all (nothing to follow or fetch).
        td.append(el("div", "transcript: see below", class_="note"))
    return td


def _anchor(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", key)


def _message_block(message: Message) -> ET.Element:
    label = str(message.role)
    if message.name:
        label += f" ({message.name}{', error' if message.is_error else ''})"
    parts: list[ET.Element | str | None] = [el("div", el("b", label))]
    parts.append(_pre(message.content) if message.content else None)
    for call in message.tool_calls:
        parts.append(_pre(f"→ {call.name}({json.dumps(call.arguments, ensure_ascii=False)})"))
    return el("div", *parts, class_="msg")


def _turn_block(turn: TurnRecord, calls: list[ToolCallRecord]) -> ET.Element:
    title = f"turn {turn.turn} · tool_choice {turn.tool_choice}"
    if turn.final_answer_turn:
        title += " · last answer turn (tools disabled: the turn budget ended on a tool call)"
    parts: list[ET.Element | str | None] = [el("h4", title)]
    parts += [_message_block(m) for m in turn.sent]
    reply = turn.reply
    if reply is None:
        parts.append(el("p", "no reply (the attempt ended here)", class_="warn"))
    else:
        meta = f"reply · stop {reply.stop_reason} · {reply.usage.output_tokens} tokens out"
        parts.append(el("div", el("b", meta)))
        parts.append(_pre(reply.content) if reply.content else el("p", "(no text)", class_="note"))
        for call in reply.tool_calls:
            parts.append(_pre(f"→ {call.name}({json.dumps(call.arguments, ensure_ascii=False)})"))
    for record in calls:
        status = "rejected" if record.is_error else "ran"
        parts.append(el("div", el("b", f"tool {record.name} {status}"), class_="note"))
        parts.append(_pre(record.result))
    return el("div", *parts, class_="turn")


def transcript_block(case: CaseResult, system_prompts: dict[str, str]) -> ET.Element:
    """A case's whole story, collapsed: input, system prompt, every turn as sent and
    answered, tool calls with their results, and every check with its reason."""
    body: list[ET.Element | str | None] = []
    if case.input is not None:
        body += [el("h4", "input"), _pre(case.input)]
    prompt = system_prompts.get(case.system_prompt or "")
    if prompt is not None:
        body.append(el("details", el("summary", "system prompt"), _pre(prompt)))
    by_turn: dict[int, list[ToolCallRecord]] = {}
    for record in case.tool_calls:
        by_turn.setdefault(record.turn, []).append(record)
    if case.transcript:
        body += [_turn_block(t, by_turn.get(t.turn, [])) for t in case.transcript]
    else:
        # Results written before transcripts were kept (version 1): the tool calls and the
        # final answer are all there is.
        for turn, calls in sorted(by_turn.items()):
            body.append(_turn_block(TurnRecord(turn=turn), calls))
        if case.output:
            body += [el("h4", "final answer"), _pre(case.output)]
    if case.checks:
        body += [el("h4", "checks"), table(_CHECK_HEADER, _check_rows(case.checks))]
    turns = len(case.transcript) or case.turns
    summary = f"{case.key} · {case.status} · {turns} turn{'s' if turns != 1 else ''}"
    return el("details", el("summary", summary), *body, id=f"t-{_anchor(case.key)}")


def _summary_cards(run: RunResult) -> ET.Element:
    s = run.summary
    cards = [
        card("cases", str(s.total)),
        card("passed", str(s.passed), STATUS_COLOURS["pass"]),
        card("failed", str(s.failed), STATUS_COLOURS["fail"]),
        card("flaky", str(s.flaky), STATUS_COLOURS["flaky"]),
        card("errors", str(s.errors), STATUS_COLOURS["error"]),
        card("skipped", str(s.skipped), STATUS_COLOURS["skipped"]),
        card(
            "checks pass / fail / n/a",
            f"{s.checks_passed} / {s.checks_failed} / {s.checks_na}",
        ),
        card("pass rate (scored)", _pct(s.pass_rate)),
        card("first-try", _pct(s.first_try_rate)),
        card("latency p50", f"{s.latency_ms.p50:.0f} ms"),
        card("latency p95", f"{s.latency_ms.p95:.0f} ms"),
        card("latency p99", f"{s.latency_ms.p99:.0f} ms"),
        card("tokens in / out", f"{s.usage.input_tokens} / {s.usage.output_tokens}"),
    ]
    if s.tokens_per_s is not None:
        cards.append(card("tokens/s", f"{s.tokens_per_s:.1f}"))
    if s.estimated_cost_usd is not None:
        cards.append(card("estimated cost", f"${s.estimated_cost_usd:.4f}"))
    return el("div", *cards, class_="cards")


def _changes(title: str, changes: list[CaseChange]) -> ET.Element | None:
    if not changes:
        return None
    rows: list[list[Cell]] = []
    for c in changes:
        detail = el("td")
        for f in c.failures:
            line = f"{f.name}: expected {_value(f.expected)}, actual {_value(f.actual)}"
            detail.append(_pre(line + (f" ({f.reason})" if f.reason else "")))
        if not c.failures and c.failed_checks:
            detail.append(el("span", ", ".join(c.failed_checks)))
        if c.reason:
            detail.append(el("span", c.reason, class_="note"))
        rows.append([c.key, el("td", badge(c.baseline)), el("td", badge(c.current)), detail])
    return el("div", el("h3", title), table(["case", "baseline", "now", "detail"], rows))


def _check_changes(title: str, changes: list[CheckChange]) -> ET.Element | None:
    if not changes:
        return None
    rows: list[list[Cell]] = [
        [
            c.key,
            c.check,
            el("td", badge(c.baseline)),
            el("td", badge(c.current)),
            el("td", _pre(c.expected)),
            el("td", _pre(c.actual)),
            el("td", _pre(c.reason)),
        ]
        for c in changes
    ]
    header = ["case", "check", "baseline", "now", "expected", "actual", "reason"]
    return el("div", el("h3", title), table(header, rows))


def _comparison(cmp: Comparison) -> ET.Element:
    colours = {0: STATUS_COLOURS["pass"], 1: STATUS_COLOURS["fail"]}
    text, colour = cmp.verdict, colours.get(cmp.exit_code, STATUS_COLOURS["error"])
    counts = cmp.counts_line()
    parts: list[ET.Element | None] = [
        el(
            "p",
            el(
                "span", f"{text} (exit {cmp.exit_code})", class_="verdict", style=f"color: {colour}"
            ),
            f" · {counts}",
        ),
        el(
            "p",
            f"baseline {cmp.baseline_file or ''} ({cmp.baseline_provider} · {cmp.baseline_model})",
            class_="note",
        ),
    ]
    parts += [el("p", f"warning: {w}", class_="warn") for w in cmp.warnings]
    parts.append(_changes("Regressions", cmp.regressions))
    parts.append(
        _check_changes(
            "Check regressions (inside cases that fail either way)", cmp.check_regressions
        )
    )
    if cmp.orphaned:
        parts.append(
            el(
                "div",
                el("h3", "Orphaned (in the baseline, missing from the results)"),
                table(["case"], [[k] for k in cmp.orphaned]),
            )
        )
    if cmp.unscored:
        rows = [
            [u.key, el("td", badge(u.status)), "yes" if u.in_baseline else "no", u.reason]
            for u in cmp.unscored
        ]
        parts.append(
            el(
                "div",
                el("h3", "Unscored"),
                table(["case", "status", "in baseline", "reason"], rows),
            )
        )
    parts.append(_changes("Improvements", cmp.improvements))
    parts.append(_check_changes("Check improvements", cmp.check_improvements))
    if cmp.new:
        rows = [[n.key, el("td", badge(n.status))] for n in cmp.new]
        parts.append(
            el("div", el("h3", "New (not in the baseline)"), table(["case", "status"], rows))
        )
    parts.append(
        _changes("Flaky in the baseline, no credible change (not gating)", cmp.flaky_changes)
    )
    if cmp.out_of_scope:
        parts.append(
            el("p", f"{cmp.out_of_scope} baseline cases not selected by this run", class_="note")
        )
    return section("Against the baseline", *parts, id_="baseline")


def run_page(run: RunResult, comparison: Comparison | None = None) -> str:
    """The report for one run, with the diff against a baseline when `comparison` is given."""
    scored = [c for c in run.cases if c.status in SCORED]
    latency = run.summary.latency_ms
    env = run.environment
    meta = (
        f"{run.provider.name} · {run.provider.model} · started {run.started_at}"
        f" · finished {run.finished_at or '-'} · evalctl {run.evalctl_version}"
        f" · {env.host} ({env.cpu}, {env.cpu_count} CPUs)"
    )
    notes: list[ET.Element | None] = []
    if run.interrupted:
        notes.append(
            el("p", "This run was interrupted: cases that never ran are missing.", class_="warn")
        )
    if run.settings.shard is not None:
        shard = run.settings.shard
        notes.append(el("p", f"Shard {shard.index}/{shard.count} of a larger run.", class_="note"))
    rows = [
        [
            el("td", el("code", c.key)),
            el("td", badge(c.status)),
            num(_passed(c)),
            num(f"{c.latency_ms:.0f} ms"),
            num(str(c.turns)),
            num(f"{c.usage.input_tokens} / {c.usage.output_tokens}"),
            _detail(c),
        ]
        for c in run.cases
    ]
    return page(
        f"evalctl · {run.run_id}",
        el("h1", f"evalctl run {run.run_id}"),
        el("p", meta, class_="meta"),
        *notes,
        section("Summary", _summary_cards(run), id_="summary"),
        _comparison(comparison) if comparison is not None else None,
        section(
            "Latency distribution",
            el("p", f"{len(scored)} scored cases; dashed lines mark p50 and p95.", class_="note"),
            histogram(
                [c.latency_ms for c in scored],
                markers=[("p50", latency.p50), ("p95", latency.p95)] if scored else [],
            ),
            id_="latency",
        ),
        section(
            f"Cases ({len(run.cases)})",
            table(
                ["case", "status", "passed", "latency", "turns", "tokens in / out", "detail"], rows
            ),
            id_="cases",
        ),
        _transcripts(run),
    )


def _transcripts(run: RunResult) -> ET.Element | None:
    shown = [c for c in run.cases if c.status in _WITH_TRANSCRIPT]
    if not shown:
        return None
    return section(
        f"Transcripts of failed cases ({len(shown)})",
        el(
            "p",
            "Each case as it ran: its input, what was sent each turn, the raw replies, tool "
            "calls with their results, and every check with its reason. Control characters "
            "in model output are shown as symbols (␀, ␛).",
            class_="note",
        ),
        *(transcript_block(c, run.system_prompts) for c in shown),
        id_="transcripts",
    )


# ---------------------------------------------------------------- documents by kind

# Result kind -> "module:function" turning a loaded document (and an optional baseline
# document) into a page. Imported lazily.
PAGE_RENDERERS: dict[str, str] = {
    "run": "evalctl.results.html:run_report",
    "soak": "evalctl.reports.soak_page:soak_report",
    "crash-test": "evalctl.reports.crash_page:crash_report",
}


def run_report(doc: Document, baseline: Document | None) -> str:
    """The page for run results, diffed against `baseline` when given."""
    from evalctl.baselines.compare import compare_baseline
    from evalctl.baselines.model import baseline_from_document
    from evalctl.results.io import run_from_document

    run = run_from_document(doc)
    comparison = None
    if baseline is not None:
        comparison = compare_baseline(
            baseline_from_document(baseline),
            run,
            results_path=doc.path,
            baseline_path=baseline.path,
        )
    return run_page(run, comparison)


def render_document(doc: Document, baseline: Document | None = None) -> str:
    """Render `doc` with the renderer registered for its kind."""
    raw_kind = doc.data.get("kind")
    kind = raw_kind if isinstance(raw_kind, str) else doc.kind
    target = PAGE_RENDERERS.get(kind or "")
    if target is None:
        known = ", ".join(sorted(PAGE_RENDERERS))
        raise BadInputError(
            f"no HTML report for {'kind ' + repr(kind) if kind else 'this document'} "
            f"(reports exist for: {known})",
            file=str(doc.path),
            field="kind",
        )
    module, attr = target.split(":")
    render: Callable[[Document, Document | None], str] = getattr(
        importlib.import_module(module), attr
    )
    return render(doc, baseline)
