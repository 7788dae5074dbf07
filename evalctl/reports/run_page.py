"""One self-contained HTML page for a run: `evalctl report RESULTS --html FILE`.

Summary cards, the comparison with a baseline when the command passes one in (the page
never computes it), the latency histogram, every case with the reasons of its failed
checks, and the transcripts of the cases a reader has to debug.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlsplit

from evalctl.baselines.comparison import (
    CATEGORIES,
    CaseChange,
    Category,
    CheckChange,
    Comparison,
    MetricChange,
    NewCase,
    RateInterval,
    UnscoredCase,
    label,
)
from evalctl.baselines.metrics import baseline_figure, metric_label, metric_value, reported
from evalctl.chat import Message
from evalctl.reports.histogram import histogram
from evalctl.reports.kit.card import STATUS_COLOURS, badge, card, rate_badge
from evalctl.reports.kit.elements import el
from evalctl.reports.kit.page import page, section
from evalctl.reports.kit.table import Cell, num, table
from evalctl.results.models import (
    SCORED,
    CaseResult,
    CheckResult,
    RunResult,
    ToolCallRecord,
    TurnRecord,
)
from evalctl.results.text import pass_rate, percent, plural, rate_tone, visible_controls
from evalctl.secrets import redact_before_cut

_VALUE_LIMIT = 4000


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = redact_before_cut(text, _VALUE_LIMIT)
    return text if len(text) <= _VALUE_LIMIT else text[:_VALUE_LIMIT] + " …"


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


def _turn_block(
    turn: TurnRecord, calls: list[ToolCallRecord], shown: Sequence[ToolCallRecord] = ()
) -> ET.Element:
    title = f"turn {turn.turn} · tool_choice {turn.tool_choice}"
    if turn.final_answer_turn:
        title += " · last answer turn (tools disabled: the turn budget ended on a tool call)"
    if turn.repeated_failed_calls:
        title += " · repeated the failed calls of the turn before: conversation ended"
    parts: list[ET.Element | str | None] = [el("h4", title)]
    for message in turn.sent:
        if message.role == "tool" and any(message.content == c.result for c in shown):
            # Already shown under the turn that called the tool; said once, not twice.
            label = f"tool ({message.name}): the result shown above"
            parts.append(el("div", el("b", label), class_="msg note"))
        else:
            parts.append(_message_block(message))
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
        earlier = list(case.tool_calls)
        body += [
            _turn_block(t, by_turn.get(t.turn, []), [r for r in earlier if r.turn < t.turn])
            for t in case.transcript
        ]
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
    summary = f"{case.key} · {case.status} · {plural(turns, 'turn')}"
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
        card("pass rate (scored)", percent(s.pass_rate)),
        card("first-try", percent(s.first_try_rate)),
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


# The page stays a bounded size whatever the run's size (a 10,000-case run made a 60 MB page
# no browser opens comfortably): at most this many case rows, transcripts and rows per
# comparison section, each cut saying how many it left out and where they are.
MAX_CASE_ROWS = 500
MAX_TRANSCRIPTS = 50
MAX_CHANGE_ROWS = 200


def _left_out(total: int, shown: int, what: str) -> ET.Element | None:
    if total <= shown:
        return None
    return el(
        "p",
        f"{total - shown} more {what} not shown on this page (of {total}): results.json has "
        "every one, `evalctl compare --all` lists them.",
        class_="warn",
    )


def _outcome(status: str, rate: RateInterval | None) -> ET.Element:
    """A side of a change: its sampled pass rate where it has one (`2/5`, coloured by the
    rate), else its status badge."""
    if rate is None:
        return el("td", badge(status))
    title = f"{rate.describe()}; {status}"
    return el("td", rate_badge(rate.passed, rate.runs, rate_tone(rate.passed, rate.runs), title))


def case_badge(case: CaseResult) -> ET.Element:
    """A case's badge: its pass count coloured by its rate when it ran more than once (`3/5`),
    else its status."""
    passed, runs = case.pass_counts()
    if runs <= 1:
        return badge(case.status)
    return rate_badge(passed, runs, rate_tone(passed, runs), f"{pass_rate(case)}; {case.status}")


def _case_rows(changes: list[CaseChange]) -> tuple[list[str], list[list[Cell]]]:
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
        before, now = _outcome(c.baseline, c.baseline_rate), _outcome(c.current, c.current_rate)
        rows.append([c.key, before, now, detail])
    return ["case", "baseline", "now", "detail"], rows


def _check_change_rows(changes: list[CheckChange]) -> tuple[list[str], list[list[Cell]]]:
    rows: list[list[Cell]] = [
        [
            c.key,
            c.check,
            _outcome(c.baseline, c.baseline_rate),
            _outcome(c.current, c.current_rate),
            el("td", _pre(c.expected)),
            el("td", _pre(c.actual)),
            el("td", _pre("; ".join(t for t in (c.reason, c.evidence or "") if t))),
        ]
        for c in changes
    ]
    return ["case", "check", "baseline", "now", "expected", "actual", "reason"], rows


def _metric_change_rows(changes: list[MetricChange]) -> tuple[list[str], list[list[Cell]]]:
    rows: list[list[Cell]] = []
    for c in changes:
        spread = f" ± {metric_value(c.metric, c.baseline_sd)}" if c.baseline_sd else ""
        rows.append(
            [
                c.key,
                metric_label(c.metric),
                metric_value(c.metric, c.run),
                metric_value(c.metric, c.limit),
                metric_value(c.metric, c.baseline_mean) + spread,
                f"{c.tolerance:.0%}",
            ]
        )
    return ["suite", "metric", "now", "limit", "baseline", "tolerance"], rows


def _metrics(cmp: Comparison) -> ET.Element | None:
    """Every suite's metrics beside the baseline's, gating or not."""
    rows: list[list[Cell]] = [
        [suite, metric_label(r.metric), metric_value(r.metric, r.run), baseline_figure(r)]
        for suite, r in reported(cmp.metrics)
    ]
    if not rows:
        return None
    return el(
        "div",
        el("h3", "Suite metrics (now vs baseline mean ± sd)"),
        table(["suite", "metric", "now", "baseline"], rows),
    )


def _rows(category: Category, entries: list[object]) -> tuple[list[str], list[list[Cell]]]:
    """One category's header and rows, drawn by the shape of its entries."""
    if category.shape == "metric":
        return _metric_change_rows([e for e in entries if isinstance(e, MetricChange)])
    if category.shape == "case":
        return _case_rows([e for e in entries if isinstance(e, CaseChange)])
    if category.shape == "check":
        return _check_change_rows([e for e in entries if isinstance(e, CheckChange)])
    if category.shape == "unscored":
        return ["case", "status", "in baseline", "reason"], [
            [u.key, el("td", badge(u.status)), "yes" if u.in_baseline else "no", u.reason]
            for u in entries
            if isinstance(u, UnscoredCase)
        ]
    if category.shape == "new":
        return ["case", "status"], [
            [n.key, el("td", badge(n.status))] for n in entries if isinstance(n, NewCase)
        ]
    return ["case"], [[label(e)] for e in entries]


def _comparison(cmp: Comparison) -> ET.Element:
    verdict = cmp.verdict
    code = verdict.exit_code
    colour = STATUS_COLOURS[code.tone]
    parts: list[ET.Element | None] = [
        el(
            "p",
            el(
                "span",
                f"{verdict.word} (exit {int(code)})",
                class_="verdict",
                style=f"color: {colour}",
            ),
            f" · {cmp.counts_line()}",
        ),
        el(
            "p",
            f"baseline {cmp.baseline_file or ''} ({cmp.baseline_provider} · {cmp.baseline_model})",
            class_="note",
        ),
    ]
    if cmp.platform_line:
        parts.append(el("p", cmp.platform_line, class_="warn"))
    parts += [el("p", f"warning: {w}", class_="warn") for w in cmp.warnings]
    parts.append(_metrics(cmp))
    for category in CATEGORIES:
        entries = cmp.entries(category)
        if not (category.listed and entries):
            continue
        header, rows = _rows(category, entries[:MAX_CHANGE_ROWS])
        parts.append(
            el(
                "div",
                el("h3", category.title),
                table(header, rows),
                _left_out(len(entries), MAX_CHANGE_ROWS, category.nouns(len(entries))),
            )
        )
    if cmp.out_of_scope:
        parts.append(
            el("p", f"{cmp.out_of_scope} baseline cases not selected by this run", class_="note")
        )
    return section("Against the baseline", *parts, id_="baseline")


def viewer_link(view_url: str | None, *segments: str) -> str | None:
    """The `evalctl view` page at `segments` under `view_url` (`[history] view_url`), or None
    when there is no viewer or its URL is not http(s)."""
    if not view_url or urlsplit(view_url).scheme not in ("http", "https"):
        return None
    return view_url.rstrip("/") + "/" + "/".join(quote(s, safe="") for s in segments)


def _viewer_note(run: RunResult, view_url: str | None) -> ET.Element | None:
    here = viewer_link(view_url, "runs", run.run_id)
    if here is None:
        return None
    suites = sorted({c.suite for c in run.cases})
    links: list[ET.Element | str] = ["In the run store's viewer: ", el("a", "this run", href=here)]
    for suite in suites:
        links += [" · ", el("a", f"{suite} trends", href=viewer_link(view_url, "trends", suite))]
    links += [" · ", el("a", "flaky cases", href=viewer_link(view_url, "flaky"))]
    return el("p", *links, class_="note")


def run_page(
    run: RunResult, comparison: Comparison | None = None, *, view_url: str | None = None
) -> str:
    """The report for one run, with the diff against a baseline when `comparison` is given;
    with `view_url` (`[history] view_url`), links to this run and each case's history in
    `evalctl view`."""
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
    # In run order; when the list must be cut, cases that did not pass come first, so the
    # page still lists every failure it can.
    listed = run.cases
    if len(listed) > MAX_CASE_ROWS:
        listed = [c for c in run.cases if c.status != "pass"] + [
            c for c in run.cases if c.status == "pass"
        ]
    rows = [
        [
            el("td", _case_key(c, view_url)),
            el("td", badge(c.status)),
            _passed(c),
            num(f"{c.latency_ms:.0f} ms"),
            num(str(c.turns)),
            num(f"{c.usage.input_tokens} / {c.usage.output_tokens}"),
            _detail(c),
        ]
        for c in listed[:MAX_CASE_ROWS]
    ]
    return page(
        f"evalctl · {run.run_id}",
        el("h1", f"evalctl run {run.run_id}"),
        el("p", meta, class_="meta"),
        _viewer_note(run, view_url),
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
            _left_out(len(listed), MAX_CASE_ROWS, "cases (those not passing are listed first)"),
            id_="cases",
        ),
        _transcripts(run),
    )


def _passed(case: CaseResult) -> ET.Element:
    """Passed runs over scored runs, coloured by the rate when the case ran more than once."""
    cell = num(pass_rate(case))
    passed, runs = case.pass_counts()
    if runs > 1:
        cell.set("style", f"color: {STATUS_COLOURS[rate_tone(passed, runs)]}")
    return cell


def _case_key(case: CaseResult, view_url: str | None) -> ET.Element:
    history = viewer_link(view_url, "cases", case.suite, case.id)
    if history is None:
        return el("code", case.key)
    return el("a", el("code", case.key), href=history, title="its history in evalctl view")


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
        *(transcript_block(c, run.system_prompts) for c in shown[:MAX_TRANSCRIPTS]),
        _left_out(len(shown), MAX_TRANSCRIPTS, "transcripts"),
        id_="transcripts",
    )
