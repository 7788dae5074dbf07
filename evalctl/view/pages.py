"""What each page shows, read from the store: one function per page, each returning the
template to draw and its context. The store's questions are `evalctl.history.queries`;
the few the pages need beyond them (a run's recorded verdicts, the run before it, one case's
answer in one run) are the small read-only queries at the end of this module.

A page is bounded: lists come `Window.size` rows at a time; a run's transcripts are read for
the cases on its page only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from evalctl.history import queries
from evalctl.history.store import Store
from evalctl.results.text import visible_controls
from evalctl.secrets import redact_before_cut
from evalctl.view import svg
from evalctl.view.links import Links

# The most of one value (an answer, a tool result, a check's actual) a page shows.
VALUE_LIMIT = 20_000
# The runs the "latest changes" of the home page are searched in.
CHANGES_WINDOW = 100
# Runs the trend charts draw when no `limit` is asked.
TREND_POINTS = 200
# The newest runs /flaky searches (`?runs=N` asks for another window, up to the cap): the page
# then costs the same however long the store's history grows.
FLAKY_WINDOW = 100
MAX_FLAKY_WINDOW = 1000


class NotFound(LookupError):
    """No such run, case or suite in the store."""


@dataclass(frozen=True)
class Window:
    """One page of a list: its number (from 1) and its size."""

    page: int = 1
    size: int = 50
    # A static site writes each list whole (it is built once, not served per request).
    whole: bool = False

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.size

    def cut(self, rows: Sequence[Any]) -> list[Any]:
        return list(rows) if self.whole else list(rows[self.offset : self.offset + self.size])


@dataclass(frozen=True)
class Page:
    template: str
    title: str
    context: dict[str, Any] = field(default_factory=dict)


def suites(store: Store) -> list[str]:
    return queries.suites(store)


def _text(value: Any) -> str:
    """A value as the page shows it: JSON for structures, control characters made visible,
    cut at VALUE_LIMIT (redacted before the cut, so a secret is never left half-masked)."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = redact_before_cut(text, VALUE_LIMIT)
    if len(text) > VALUE_LIMIT:
        text = text[:VALUE_LIMIT] + " …"
    return visible_controls(text)


def _when(started_at: str) -> str:
    """`2026-11-02 16:00` of an ISO timestamp (UTC as recorded): a table's width."""
    return started_at[:16].replace("T", " ")


def _safe_url(url: str | None) -> str | None:
    # A recorded CI URL is shown as a link only when it is http(s): never `javascript:`.
    if url and urlsplit(url).scheme in ("http", "https"):
        return url
    return None


def _pager(window: Window, has_next: bool, links: Links, here: Sequence[str], **query: Any) -> Any:
    if links.static:
        return {"prev": None, "next": None, "number": 1, "cut": False, "size": window.size}
    size = None if window.size == 50 else window.size
    return {
        "number": window.page,
        "prev": links.to(*here, page=window.page - 1, limit=size, **query)
        if window.page > 1
        else None,
        "next": links.to(*here, page=window.page + 1, limit=size, **query) if has_next else None,
        "cut": False,
        "size": window.size,
    }


# ---------------------------------------------------------------- runs


RUN_FILTERS = ("suite", "provider", "model", "branch", "since")


def _run_row(r: queries.RunSummary, previous: str | None) -> dict[str, Any]:
    return {
        "run_id": r.id,
        "label": r.run_id,
        "started_at": _when(r.started_at),
        "suites": r.suites,
        "provider": r.provider,
        "model": r.model,
        "commit": (r.git_commit or "")[:12] or None,
        "dirty": bool(r.git_dirty),
        "branch": r.git_branch,
        "cases": r.total,
        "pass_rate": r.pass_rate,
        "previous": previous,
    }


def runs(store: Store, *, links: Links, window: Window, query: Mapping[str, str]) -> Page:
    filters = {name: (query.get(name) or "").strip() or None for name in RUN_FILTERS}
    limit = None if window.whole else window.size + 1
    found = queries.list_runs(store, limit=limit, offset=window.offset, **filters)
    has_next = not window.whole and len(found) > window.size
    shown = found if window.whole else found[: window.size]
    rows = []
    for i, r in enumerate(shown):
        # The run before it on the same provider, model and suites, where this list has it.
        older = next(
            (
                o
                for o in found[i + 1 :]
                if (o.provider, o.model, o.suites) == (r.provider, r.model, r.suites)
            ),
            None,
        )
        rows.append(_run_row(r, older.id if older else None))
    total = queries.count_runs(store, **filters)
    changes = None
    if window.page == 1:
        since = window_start(store, CHANGES_WINDOW)
        changes = [_change(c) for c in queries.changes(store, since=since)[: window.size]]
    return Page(
        "runs.html",
        "Runs",
        {
            "runs": rows,
            "total": total,
            "filters": {k: v or "" for k, v in filters.items()},
            "filtered": any(filters.values()),
            "changes": changes,
            "changes_window": CHANGES_WINDOW,
            "pager": _pager(window, has_next, links, ["runs"], **filters),
        },
    )


def _change(c: queries.Change | None) -> dict[str, Any] | None:
    if c is None:
        return None
    return {
        "suite": c.suite,
        "case_id": c.case_id,
        "run_id": c.run,
        "label": c.run_id,
        "commit": (c.git_commit or "")[:12] or None,
        "before": c.before_passed / c.before_samples if c.before_samples else None,
        "after": c.after_passed / c.after_samples if c.after_samples else None,
        "p_value": c.adjusted_p,
        "direction": c.direction,
    }


# ---------------------------------------------------------------- one run


def _turns(transcript: queries.Transcript | None) -> list[dict[str, Any]]:
    if transcript is None:
        return []
    turns: list[dict[str, Any]] = []
    for t in transcript.transcript:
        messages = []
        for msg in t.get("sent", []):
            messages.append(_message(msg))
        reply = t.get("reply")
        if reply:
            messages.append(_message({**reply, "role": "assistant"}))
        turns.append({"turn": t.get("turn", len(turns) + 1), "messages": messages})
    return turns


def _message(msg: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "role": str(msg.get("role", "")),
        "name": msg.get("name"),
        "is_error": bool(msg.get("is_error")),
        "content": _text(msg.get("content", "")),
        "tool_calls": [
            {"name": str(c.get("name", "")), "arguments": _text(c.get("arguments", {}))}
            for c in msg.get("tool_calls", [])
        ],
    }


def _tool_calls(transcript: queries.Transcript | None) -> list[dict[str, Any]]:
    if transcript is None:
        return []
    return [
        {
            "name": str(c.get("name", "")),
            "arguments": _text(c.get("arguments", {})),
            "result": _text(c.get("result", "")),
            "is_error": bool(c.get("is_error")),
        }
        for c in transcript.tool_calls
    ]


def _case_row(c: queries.CaseRecord, transcript: queries.Transcript | None) -> dict[str, Any]:
    return {
        "suite": c.suite,
        "case_id": c.case_id,
        "status": c.status,
        "pass_rate": c.pass_rate,
        "latency_ms": c.latency_ms,
        "tokens": c.tokens_in + c.tokens_out,
        "error": _text(c.error) if c.error else None,
        "output": _text(c.output),
        "checks": [
            {
                "name": ch.name,
                "status": ch.status,
                "expected": _text(ch.expected),
                "actual": _text(ch.actual),
                "message": _text(ch.message),
            }
            for ch in c.checks
        ],
        "tool_calls": _tool_calls(transcript),
        "turns": _turns(transcript),
    }


def _header(r: queries.RunSummary) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for status, n in (
        ("pass", r.passed),
        ("fail", r.failed),
        ("error", r.errors),
        ("skipped", r.skipped),
    ):
        if n:
            counts[status] = n
    return {
        "run_id": r.id,
        "label": r.run_id,
        "provider": r.provider,
        "model": r.model,
        "started_at": _when(r.started_at),
        "commit": (r.git_commit or "")[:12] or None,
        "branch": r.git_branch,
        "dirty": bool(r.git_dirty),
        "ci_url": _safe_url(r.ci_url),
        "ci_run_id": r.ci_run_id,
        "cases": r.total,
        "pass_rate": r.pass_rate,
        "counts": counts,
        "latency_p50": r.latency_p50,
        "latency_p95": r.latency_p95,
        "tokens": f"{r.tokens_in} / {r.tokens_out}",
        "cost": r.cost_usd,
    }


def run(
    store: Store,
    *,
    links: Links,
    run_id: str,
    window: Window,
    query: Mapping[str, str] | None = None,
) -> Page:
    detail = queries.get_run(store, run_id, transcripts=False)
    if detail is None:
        raise NotFound(f"no run {run_id!r} in the store")
    # `?status=fail` (or pass, flaky, error, skipped): only the cases that ended so.
    status = ((query or {}).get("status") or "").strip() or None
    listed = [c for c in detail.cases if status is None or c.status == status]
    shown = window.cut(listed)
    transcripts = _transcripts(store, [c.transcript_hash for c in shown if c.transcript_hash])
    cases = [_case_row(c, transcripts.get(c.transcript_hash or "")) for c in shown]
    has_next = not window.whole and window.offset + window.size < len(listed)
    here = ["runs", detail.run.id]
    present = sorted({c.status for c in detail.cases})
    return Page(
        "run.html",
        f"Run {detail.run.run_id}",
        {
            "run": _header(detail.run),
            "cases": cases,
            "status": status,
            "statuses": [] if links.static else [(s, links.to(*here, status=s)) for s in present],
            "all_cases": links.to(*here),
            "verdicts": _verdicts(store, detail.run),
            "previous": previous_run(store, detail.run),
            "pager": _pager(window, has_next, links, here, status=status),
        },
    )


def _transcripts(store: Store, hashes: Sequence[str]) -> dict[str, queries.Transcript]:
    found = {}
    for h in sorted(set(hashes)):
        t = queries.get_transcript(store, h)
        if t is not None:
            found[h] = t
    return found


# ---------------------------------------------------------------- cases


def cases(store: Store, *, links: Links, window: Window, query: Mapping[str, str]) -> Page:
    pick = {k: (query.get(k) or "").strip() or None for k in ("suite", "provider", "model")}
    limit = None if window.whole else window.size + 1
    latest = latest_per_case(store, pick, limit=limit, offset=window.offset)
    has_next = not window.whole and len(latest) > window.size
    shown = latest if window.whole else latest[: window.size]
    # Changepoints are searched in the recent runs only, so the page costs the same however
    # long the store's history grows; a case's own page searches all of its runs.
    since = window_start(store, CHANGES_WINDOW)
    found = {
        (c.suite, c.case_id, c.provider, c.model, c.prompt_variant): c
        for c in queries.changes(
            store, since=since, suite=pick["suite"], provider=pick["provider"], model=pick["model"]
        )
    }
    rows = [
        {
            **row,
            "change": _change(found.get(key)),
        }
        for key, row in shown
    ]
    return Page(
        "cases.html",
        "Cases",
        {
            "cases": rows,
            "suite": pick["suite"],
            "changes_window": CHANGES_WINDOW,
            "pager": _pager(window, has_next, links, ["cases"], **pick),
        },
    )


def _side(
    store: Store, history: queries.CaseHistory, run_key: str, label: str
) -> dict[str, Any] | None:
    found = case_answer(store, run_key, history)
    if found is None:
        return None
    status, output, transcript_hash = found
    transcript = queries.get_transcript(store, transcript_hash) if transcript_hash else None
    return {
        "run_id": run_key,
        "label": label,
        "status": status,
        "output": _text(output),
        "tool_calls": _tool_calls(transcript),
        "turns": _turns(transcript),
    }


def case(
    store: Store,
    *,
    links: Links,
    suite: str,
    case_id: str,
    query: Mapping[str, str],
    window: Window,
) -> Page:
    provider = (query.get("provider") or "").strip() or None
    model = (query.get("model") or "").strip() or None
    history = queries.case_history(store, suite, case_id, provider=provider, model=model)
    if history is None:
        raise NotFound(f"no case {suite}/{case_id} in the store")
    runs = history.runs
    by_key = {r.run: r for r in runs}
    # The two answers side by side: the runs asked for (a, b), else the last run before the
    # changepoint and the changepoint's run, else the last two runs.
    a, b = query.get("a"), query.get("b")
    if a not in by_key or b not in by_key:
        if history.change is not None:
            index = next(i for i, r in enumerate(runs) if r.run == history.change.run)
            default = (runs[max(index - 1, 0)].run, runs[index].run)
        elif len(runs) >= 2:
            default = (runs[-2].run, runs[-1].run)
        else:
            default = (runs[-1].run, runs[-1].run)
        a = a if a in by_key else default[0]
        b = b if b in by_key else default[1]
    pair = None
    side_a = _side(store, history, a, by_key[a].run_id)
    side_b = _side(store, history, b, by_key[b].run_id)
    if side_a is not None and side_b is not None:
        pair = {"a": side_a, "b": side_b}
    rows = [
        {
            "run_id": r.run,
            "label": r.run_id,
            "started_at": _when(r.started_at),
            "commit": (r.git_commit or "")[:12] or None,
            "status": r.status,
            "pass_rate": r.pass_rate,
            "passed": r.passed,
            "samples": r.samples,
            "latency_ms": r.latency_ms,
        }
        for r in runs
    ]
    others = []
    for label in history.others:
        prov_model = label.split(",", 1)[0]
        prov, _, mod = prov_model.partition("/")
        others.append(
            {"label": label, "href": links.to("cases", suite, case_id, provider=prov, model=mod)}
        )
    return Page(
        "case.html",
        f"{suite}/{case_id}",
        {
            "suite": suite,
            "case_id": case_id,
            "provider": history.provider,
            "model": history.model,
            "history": rows,
            # The table: newest first, a page at a time (the strip above shows every run).
            "table": window.cut(rows[::-1]),
            "pager": _pager(
                window,
                not window.whole and window.offset + window.size < len(rows),
                links,
                ["cases", suite, case_id],
                provider=provider,
                model=model,
                a=query.get("a"),
                b=query.get("b"),
            ),
            "change": _change(history.change),
            "redefined": [
                {"run_id": r.run, "label": r.run_id} for r in runs if r.definition_changed
            ],
            "pair": pair,
            "others": [] if links.static else others,
        },
    )


# ---------------------------------------------------------------- trends and flaky


def trends(
    store: Store, *, links: Links, suite: str, query: Mapping[str, str], window: Window
) -> Page:
    provider = (query.get("provider") or "").strip() or None
    model = (query.get("model") or "").strip() or None
    if provider is None or model is None:
        latest = latest_run_of_suite(store, suite, provider, model)
        if latest is None:
            raise NotFound(f"no runs of suite {suite!r} in the store")
        provider, model = latest
    limit = TREND_POINTS if window.whole or window.size == 50 else window.size
    points = queries.trend(store, suite, provider=provider, model=model, last=limit)
    if not points:
        raise NotFound(f"no runs of suite {suite!r} on {provider} {model} in the store")
    # Under the axis the start (month-day hour:minute); on hover the run and its commit.
    labels = [p.started_at[5:16].replace("T", " ") for p in points]
    tips = [f"{p.run_id} {(p.git_commit or '')[:12]}".strip() for p in points]

    def pct(v: float | None) -> float | None:
        return None if v is None else v * 100

    band = [
        (pct(p.ci_low) or 0.0, pct(p.ci_high) or 0.0) if p.ci_low is not None else None
        for p in points
    ]

    def chart(*args: Any, **kwargs: Any) -> svg.Chart:
        return svg.line_chart(*args, tips=tips, **kwargs)

    charts = [
        chart(
            "pass rate (95% interval shaded)",
            "%",
            labels,
            [svg.SeriesSpec("pass rate", "#1a7f37", [pct(p.pass_rate) for p in points])],
            band=band,
            fixed=(0.0, 100.0),
        ),
        chart(
            "latency (ms)",
            "ms",
            labels,
            [
                svg.SeriesSpec("p50", "#0969da", [p.latency_p50 for p in points]),
                svg.SeriesSpec("p95", "#bf8700", [p.latency_p95 for p in points], dashed=True),
            ],
        ),
        chart(
            "tokens",
            "tokens",
            labels,
            [
                svg.SeriesSpec("input", "#8250df", [float(p.tokens_in) for p in points]),
                svg.SeriesSpec("output", "#cf222e", [float(p.tokens_out) for p in points]),
            ],
        ),
        chart(
            "cost (USD)",
            "$",
            labels,
            [svg.SeriesSpec("cost", "#1f2328", [p.cost_usd for p in points])],
        ),
    ]
    return Page(
        "trends.html",
        f"Trends: {suite}",
        {
            "suite": suite,
            "provider": provider,
            "model": model,
            "charts": charts,
            "points": len(points),
            "limit": limit,
        },
    )


def flaky(store: Store, *, links: Links, window: Window, query: Mapping[str, str]) -> Page:
    pick = {k: (query.get(k) or "").strip() or None for k in ("suite", "provider", "model")}
    raw = query.get("runs", "")
    runs = min(int(raw), MAX_FLAKY_WINDOW) if raw.isdigit() and int(raw) > 1 else FLAKY_WINDOW
    found = queries.flaky_cases(
        store,
        since=window_start(store, runs),
        suite=pick["suite"],
        provider=pick["provider"],
        model=pick["model"],
    )
    shown = window.cut(found)
    rows = [
        {
            "suite": f.suite,
            "case_id": f.case_id,
            "provider": f.provider,
            "model": f.model,
            "flips": f.flips,
            "runs": f.runs,
            "pass_rate": f.pass_rate,
            "low": f.ci_low,
            "high": f.ci_high,
        }
        for f in shown
    ]
    has_next = not window.whole and window.offset + window.size < len(found)
    here = {**pick, "runs": None if runs == FLAKY_WINDOW else runs}
    return Page(
        "flaky.html",
        "Flaky cases",
        {
            "flaky": rows,
            "window": runs,
            "pager": _pager(window, has_next, links, ["flaky"], **here),
        },
    )


# ---------------------------------------------------------------- compare


def compare(store: Store, *, links: Links, a: str, b: str, window: Window) -> Page:
    from evalctl.view.verdict import gate_pair

    first = queries.get_run(store, a, transcripts=False)
    second = queries.get_run(store, b, transcripts=False)
    for name, found in ((a, first), (b, second)):
        if found is None:
            raise NotFound(f"no run {name!r} in the store")
    assert first is not None and second is not None
    older, newer = sorted((first, second), key=lambda d: (d.run.started_at, d.run.id))
    verdict, refusal = gate_pair(older, newer)
    before = {c.key: c for c in older.cases}
    after = {c.key: c for c in newer.cases}
    keys = sorted(set(before) | set(after))
    changed = [k for k in keys if _status(before.get(k)) != _status(after.get(k))]
    shown = window.cut(changed)
    hashes = [
        c.transcript_hash
        for k in shown
        for c in (before.get(k), after.get(k))
        if c is not None and c.transcript_hash
    ]
    transcripts = _transcripts(store, hashes)

    def side(c: queries.CaseRecord | None) -> dict[str, Any] | None:
        if c is None:
            return None
        return _case_row(c, transcripts.get(c.transcript_hash or ""))

    rows = []
    for k in shown:
        ref = before.get(k) or after.get(k)
        assert ref is not None
        rows.append(
            {
                "suite": ref.suite,
                "case_id": ref.case_id,
                "before": _status(before.get(k)),
                "after": _status(after.get(k)),
                "a": side(before.get(k)),
                "b": side(after.get(k)),
            }
        )
    return Page(
        "compare.html",
        f"Compare {older.run.run_id} and {newer.run.run_id}",
        {
            "a": _header(older.run),
            "b": _header(newer.run),
            "verdict": verdict,
            "refusal": refusal,
            "changed": rows,
            "more_changed": max(0, len(changed) - len(shown)),
        },
    )


def _status(c: queries.CaseRecord | None) -> str:
    return c.status if c is not None else "absent"


# ---------------------------------------------------------------- queries of the viewer's own


def _verdicts(store: Store, run: queries.RunSummary) -> list[dict[str, Any]]:
    """The `compare` verdicts recorded for this run, newest first: those recorded with its
    key, or whose subject is its results file (`compare` records the file it gated)."""
    from evalctl.errors import ExitCode

    subjects = [""]  # no verdict has an empty subject: a run without a source matches none
    if run.source:
        folder = Path(run.source)
        for path in (folder, folder / "results.json"):
            subjects += [str(path), str(path.resolve())]
    marks = ", ".join("?" for _ in subjects)
    rows = store.query(
        "SELECT outcome, exit_code, subject, body FROM verdicts WHERE kind = 'compare' "
        f"AND (run_key = ? OR subject IN ({marks})) ORDER BY recorded_at DESC LIMIT 10",
        [run.id, *subjects],
    )
    found = []
    for outcome, exit_code, subject, body in rows:
        data = json.loads(body) if body else {}
        data = data if isinstance(data, dict) else {}
        try:
            code = ExitCode(int(exit_code))
            word, tone = code.verdict, code.tone
        except ValueError:
            word, tone = str(outcome), "error"
        summary = data.get("summary")
        found.append(
            {
                "word": word,
                "tone": tone,
                "exit_code": int(exit_code),
                "baseline": _text(data.get("baseline") or subject),
                "reasons": [_text(summary)] if isinstance(summary, str) and summary else [],
            }
        )
    return found


def previous_run(store: Store, r: queries.RunSummary) -> str | None:
    """The run before `r` with its provider, model and suites."""
    rows = store.query(
        "SELECT run_key FROM runs WHERE provider = ? AND model = ? AND suites = ? "
        "AND (started_at < ? OR (started_at = ? AND run_key < ?)) "
        "ORDER BY started_at DESC, run_key DESC LIMIT 1",
        [r.provider, r.model, json.dumps(r.suites), r.started_at, r.started_at, r.id],
    )
    return str(rows[0][0]) if rows else None


def case_answer(
    store: Store, run_key: str, history: queries.CaseHistory
) -> tuple[str, str, str | None] | None:
    """(status, answer, transcript hash) of the case in one run of its history."""
    rows = store.query(
        "SELECT status, output, transcript_hash FROM cases WHERE run_key = ? AND suite = ? "
        "AND case_id = ? AND provider = ? AND model = ? AND prompt_variant = ?",
        [run_key, history.suite, history.case_id, history.provider, history.model,
         history.prompt_variant],
    )  # fmt: skip
    if not rows:
        return None
    status, output, transcript_hash = rows[0]
    return str(status), str(output), transcript_hash


def latest_run_of_suite(
    store: Store, suite: str, provider: str | None, model: str | None
) -> tuple[str, str] | None:
    """(provider, model) of the suite's latest run, within those given."""
    clauses, params = ["suite = ?"], [suite]
    for column, value in (("provider", provider), ("model", model)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    rows = store.query(
        f"SELECT provider, model FROM run_suites WHERE {' AND '.join(clauses)} "
        "ORDER BY started_at DESC LIMIT 1",
        params,
    )
    return (str(rows[0][0]), str(rows[0][1])) if rows else None


def window_start(store: Store, runs: int) -> str | None:
    """The start of the `runs`-th newest run: a window of the newest runs, as a `since`."""
    rows = store.query(
        "SELECT started_at FROM runs ORDER BY started_at DESC LIMIT 1 OFFSET ?", [runs - 1]
    )
    return str(rows[0][0]) if rows else None


def latest_per_case(
    store: Store, pick: Mapping[str, str | None], *, limit: int | None, offset: int
) -> list[tuple[tuple[str, str, str, str, str], dict[str, Any]]]:
    """Each case's latest run (per provider, model, prompt variant and sampling: its history
    key), by suite and case id, a page of them: found in SQL on the history index, without
    reading every run of every case."""
    clauses: list[str] = []
    params: list[Any] = []
    for column in ("suite", "provider", "model"):
        if pick.get(column):
            clauses.append(f"c.{column} = ?")
            params.append(pick[column])
    where = (" AND " + " AND ".join(clauses)) if clauses else ""
    page = ""
    if limit is not None:
        page = " LIMIT ? OFFSET ?"
        params += [limit, offset]
    rows = store.query(
        "SELECT c.suite, c.case_id, c.provider, c.model, c.prompt_variant, c.status, "
        # CROSS JOIN: SQLite then starts from the totals (a row per case) and looks each
        # one's latest run up, rather than scanning every run of every case.
        "c.pass_rate, c.run_key, r.run_id FROM case_totals m CROSS JOIN cases c "
        "JOIN runs r ON r.run_key = c.run_key "
        "WHERE m.history_key = c.history_key AND m.last_started = c.started_at"
        f"{where} "
        f"ORDER BY c.suite, c.case_id, c.provider, c.model, c.prompt_variant{page}",
        params,
    )
    found = []
    for suite, case_id, provider, model, variant, status, rate, run_key, run_id in rows:
        key = (str(suite), str(case_id), str(provider), str(model), str(variant))
        found.append(
            (
                key,
                {
                    "suite": suite,
                    "case_id": case_id,
                    "provider": provider,
                    "model": model,
                    "status": status,
                    "pass_rate": rate,
                    "run_id": run_key,
                    "label": run_id,
                },
            )
        )
    return found
