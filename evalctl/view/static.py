"""`evalctl view --static OUT`: the viewer's pages written as files, for a CI artifact or
GitHub Pages. The same page functions and templates as the live viewer, with relative links
(`Links(static=True)`), each page `PATH/index.html`; every list whole (one page each), the
query-string views at their default (a case's side by side: around its changepoint, else its
last two runs), and compare pages for consecutive runs only (each run with the one before it
on the same provider, model and suites), not every pair."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalctl.history import queries
from evalctl.history.store import Store
from evalctl.results.io import write_text_atomic
from evalctl.view import pages
from evalctl.view.links import Links, file_segment
from evalctl.view.render import render

_WHOLE = pages.Window(page=1, size=1_000_000, whole=True)


@dataclass(frozen=True)
class StaticSite:
    out: str
    pages: int
    bytes: int


def write_site(store: Store, out: Path) -> StaticSite:
    """Every page of the store under `out` (created; existing pages replaced)."""
    suites = pages.suites(store)
    written = [0, 0]

    def emit(segments: tuple[str, ...], build: Callable[..., pages.Page], **kw: Any) -> None:
        links = Links(static=True, depth=len(segments))
        page = build(store, links=links, **kw)
        html = render(page.template, {"title": page.title, **page.context}, links, suites)
        folder = out.joinpath(*(file_segment(s) for s in segments))
        folder.mkdir(parents=True, exist_ok=True)
        write_text_atomic(folder / "index.html", html)
        written[0] += 1
        written[1] += len(html.encode())

    out.mkdir(parents=True, exist_ok=True)
    emit((), pages.runs, window=_WHOLE, query={})
    emit(("runs",), pages.runs, window=_WHOLE, query={})
    emit(("cases",), pages.cases, window=_WHOLE, query={})
    emit(("flaky",), pages.flaky, window=_WHOLE, query={})
    for suite in suites:
        emit(("trends", suite), pages.trends, suite=suite, query={}, window=_WHOLE)
    all_runs = queries.list_runs(store, limit=None)
    for r in all_runs:
        emit(("runs", r.id), pages.run, run_id=r.id, window=_WHOLE)
        before = pages.previous_run(store, r)
        if before is not None:
            emit(("compare", before, r.id), pages.compare, a=before, b=r.id, window=_WHOLE)
    seen: set[tuple[str, str]] = set()
    for c in queries.latest_cases(store, with_changes=False):
        if (c.suite, c.case_id) in seen:
            continue
        seen.add((c.suite, c.case_id))
        emit(("cases", c.suite, c.case_id), pages.case, suite=c.suite, case_id=c.case_id,
             query={}, window=_WHOLE)  # fmt: skip
    return StaticSite(out=os.fspath(out), pages=written[0], bytes=written[1])
