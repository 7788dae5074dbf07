"""`evalctl view`: every page over a real SQLite store (Starlette's TestClient), the escaping
of a hostile transcript, the token off loopback, read-only access, bounded requests and the
static site. The real browser is tests/test_view_browser.py."""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from evalctl.history import queries
from evalctl.history.record import Provenance, record_run
from evalctl.history.store import open_store
from evalctl.view import svg
from evalctl.view.app import ViewConfig, create_app
from evalctl.view.links import Links, file_segment
from evalctl.view.source import open_read_only
from tests.cli_helpers import REPO, run_cli
from tests.history_helpers import PostgresServer, postgres_server
from tests.view_helpers import (
    BROKEN_AT,
    HOSTILE,
    RUNS,
    build_store,
    commit,
    run_id,
    run_result,
)

__all__ = ["postgres_server"]  # a fixture, used by name

LOCAL = "http://127.0.0.1"


@pytest.fixture(scope="module")
def store_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("store") / "history.sqlite"
    build_store(path)
    return path


@pytest.fixture(scope="module")
def keys(store_file: Path) -> list[str]:
    """The runs' store keys, oldest first."""
    with open_store(str(store_file)) as store:
        return [r.id for r in reversed(queries.list_runs(store, limit=None))]


@pytest.fixture
def client(store_file: Path) -> Iterator[TestClient]:
    with TestClient(create_app(ViewConfig(store_url=str(store_file))), base_url=LOCAL) as c:
        yield c


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> _Tags:
    tags = _Tags()
    tags.feed(html)
    return tags


def text_of(html: str) -> str:
    return " ".join(" ".join(parse(html).text).split())


def listed(html: str) -> list[str]:
    """The store keys of the runs table's rows, in order."""
    table = html.split('id="runs"')[1].split("</table>")[0]
    return re.findall(r'<td class="nw"><a href="/runs/([0-9a-f]+)">', table)


def test_the_runs_page_lists_filters_pages_and_shows_the_latest_change(
    client: TestClient, keys: list[str]
) -> None:
    home = client.get("/")
    assert home.status_code == 200
    assert f"{RUNS} runs in the store" in text_of(home.text)
    assert home.text == client.get("/runs").text
    # Newest first; the change of shop/steady at run 25, with its commit.
    assert listed(home.text)[0] == keys[-1]
    changes = home.text.split('id="changes"')[1]
    assert "shop/steady" in changes and commit(BROKEN_AT)[:12] in changes
    assert f'href="/runs/{keys[BROKEN_AT - 1]}"' in changes
    assert "coin" not in changes  # half-passing cases are flaky, not changed
    # Filters are query parameters; pages are bounded by `limit`.
    since = client.get("/runs", params={"since": "2026-11-02T12:00"})
    assert "5 runs in the store, filtered" in text_of(since.text)
    none = client.get("/runs", params={"branch": "nope"})
    assert "no runs match these filters" in text_of(none.text)
    first = client.get("/runs", params={"limit": 7})
    assert listed(first.text) == keys[::-1][:7]
    assert 'rel="next"' in first.text and 'rel="prev"' not in first.text
    second = client.get("/runs", params={"limit": 7, "page": 2})
    assert listed(second.text) == keys[::-1][7:14]
    # A page size past the cap is cut to it, not refused.
    assert client.get("/runs", params={"limit": 10**9}).status_code == 200


def test_a_run_page_has_its_cases_checks_transcripts_and_tool_calls(
    client: TestClient, keys: list[str]
) -> None:
    page = client.get(f"/runs/{keys[-1]}")
    assert page.status_code == 200
    words = text_of(page.text)
    assert "shop/steady" in words and "shop/hostile" in words
    assert "lookup" in words  # the tool call, its arguments and result
    assert "answer" in words  # the failing check of shop/steady
    assert "compare it with the run before" in words
    assert f'href="/compare/{keys[-2]}/{keys[-1]}"' in page.text
    # Only the cases that ended so, on asking.
    failed = client.get(f"/runs/{keys[-1]}", params={"status": "fail"})
    shown = re.findall(r'<tr id="case-\d+"><td><a href="/cases/shop/([\w-]+)"', failed.text)
    assert shown and "steady" in shown and "hostile" not in shown
    # A run is also found by its run id, the name report.html links it by.
    by_name = client.get(f"/runs/{run_id(RUNS)}")
    assert by_name.status_code == 200 and text_of(by_name.text) == text_of(page.text)
    assert client.get("/runs/no-such-run").status_code == 404


def test_the_hostile_transcript_is_text_on_every_page(client: TestClient, keys: list[str]) -> None:
    pages = [
        f"/runs/{keys[-1]}",
        "/cases/shop/hostile",
        f"/compare/{keys[0]}/{keys[-1]}",
    ]
    for path in pages:
        html = client.get(path).text
        assert "<script" not in html and "<img" not in html, path
        assert "onerror=alert" not in html.replace("onerror=alert(1)&gt;", ""), path
    run_page = client.get(f"/runs/{keys[-1]}").text
    assert "&lt;script&gt;alert(&#34;pwned&#34;)&lt;/script&gt;" in run_page
    # Parsed as a browser parses it: no element but the page's own.
    tags = {tag for tag, _ in parse(run_page).tags}
    assert "script" not in tags and "img" not in tags
    assert HOSTILE in " ".join(parse(run_page).text)
    # And no script may run even if something slipped through.
    policy = client.get("/runs").headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src" not in policy


def test_markup_in_a_commit_is_escaped_in_the_svg_charts(tmp_path: Path) -> None:
    path = tmp_path / "h.sqlite"
    build_store(path, runs=3)
    with open_store(str(path)) as store:
        record_run(store, run_result(4), Provenance(git_commit="<svg onload=x>", git_branch="m"))
    with TestClient(create_app(ViewConfig(store_url=str(path))), base_url=LOCAL) as c:
        page = c.get("/trends/shop").text
    assert "<svg onload" not in page
    assert "&lt;svg onload=" in page  # in each dot's tip (the commit's first 12 characters)
    assert [t for t, _ in parse(page).tags].count("svg") == 3  # the fourth, cost, has no data


def test_cases_page_and_a_case_history_with_its_changepoint(
    client: TestClient, keys: list[str]
) -> None:
    cases = client.get("/cases")
    row = next(r for r in cases.text.split("<tr>") if "shop/steady" in r)
    assert "fail" in row and keys[BROKEN_AT - 1] in row and "100% → 0%" in text_of(row)
    coin = next(r for r in cases.text.split("<tr>") if "shop/coin-a" in r)
    assert "→" not in coin  # a flake has no changepoint
    page = client.get("/cases/shop/steady")
    assert page.status_code == 200
    strip = page.text.split('id="strip"')[1].split("</div>")[0]
    statuses = re.findall(r'data-status="(\w+)"', strip)
    assert statuses == ["pass"] * (BROKEN_AT - 1) + ["fail"] * (RUNS - BROKEN_AT + 1)
    # The changepoint mark sits just before run 25's square.
    marked = strip.split('class="cp"')[1]
    assert re.findall(r'href="/runs/([0-9a-f]+)"', marked)[0] == keys[BROKEN_AT - 1]
    assert commit(BROKEN_AT)[:12] in text_of(page.text.split('id="changepoint"')[1])
    # By default the answers around the change sit side by side ...
    side = page.text.split('id="side-by-side"')[1]
    assert "steady says pass in run 24" in side and "steady says fail in run 25" in side
    # ... and any two runs on asking.
    asked = client.get("/cases/shop/steady", params={"a": keys[2], "b": keys[35]})
    side = asked.text.split('id="side-by-side"')[1]
    assert "steady says pass in run 3" in side and "steady says fail in run 36" in side
    assert client.get("/cases/shop/nothing").status_code == 404


def test_trends_draw_pass_rate_with_its_interval_latency_tokens_and_cost(
    client: TestClient,
) -> None:
    page = client.get("/trends/shop")
    assert page.status_code == 200
    tags = parse(page.text).tags
    # The scripted provider is not billed: no cost to draw, and the page says so.
    assert [t for t, _ in tags].count("svg") == 3
    titles = " ".join(parse(page.text).text)
    for title in ("pass rate", "latency", "tokens"):
        assert title in titles
    assert "cost (USD): nothing recorded" in titles
    band = next(a for t, a in tags if t == "polygon")
    assert len((band["points"] or "").split()) == 2 * RUNS
    dots = [a for t, a in tags if t == "circle"]
    assert len(dots) >= RUNS
    assert client.get("/trends/nothing").status_code == 404


def test_flaky_ranks_the_two_half_passing_cases_first(client: TestClient) -> None:
    page = client.get("/flaky")
    ranked = re.findall(r'href="/cases/shop/([\w-]+)"', page.text)
    assert ranked[:2] in (["coin-a", "coin-b"], ["coin-b", "coin-a"])
    assert "steady" not in ranked  # it changed once: a change, not a flake


def test_compare_gives_the_verdict_compare_gives_and_changed_cases_side_by_side(
    client: TestClient, keys: list[str]
) -> None:
    page = client.get(f"/compare/{keys[BROKEN_AT - 2]}/{keys[BROKEN_AT - 1]}")
    assert page.status_code == 200
    verdict = text_of(page.text.split('id="verdict"')[1].split('id="changed"')[0])
    # One pass -> fail on one sample is noise to the statistical gate: within noise, OK.
    assert "Verdict OK (exit 0, statistical gate)" in verdict
    assert "1 within noise" in verdict
    changed = page.text.split('id="changed"')[1]
    assert "shop/steady" in changed
    assert "steady says pass in run 24" in changed and "steady says fail in run 25" in changed
    # Either order: the older run is the baseline.
    assert text_of(client.get(f"/compare/{keys[BROKEN_AT - 1]}/{keys[BROKEN_AT - 2]}").text) == (
        text_of(page.text)
    )
    assert client.get(f"/compare/{keys[0]}/nope").status_code == 404


def test_the_viewer_only_reads(store_file: Path, client: TestClient, keys: list[str]) -> None:
    before = hashlib.sha256(store_file.read_bytes()).hexdigest()
    for path in ("/", "/cases", "/flaky", "/trends/shop", f"/runs/{keys[0]}",
                 f"/compare/{keys[0]}/{keys[1]}", "/cases/shop/steady"):  # fmt: skip
        assert client.get(path).status_code == 200
    assert hashlib.sha256(store_file.read_bytes()).hexdigest() == before
    # Nothing but GET (and HEAD) is served.
    assert client.post("/runs").status_code == 405
    assert client.delete(f"/runs/{keys[0]}").status_code == 405
    # Its connection cannot write either.
    store = open_read_only(str(store_file), 5.0)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.conn.execute("DELETE FROM runs")
    finally:
        store.close()


def test_a_missing_store_is_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "none.sqlite"
    with TestClient(create_app(ViewConfig(store_url=str(missing))), base_url=LOCAL) as c:
        page = c.get("/runs")
    assert page.status_code == 503 and "no run store here" in page.text
    assert not missing.exists()


def test_a_page_past_its_time_limit_is_refused(store_file: Path) -> None:
    # A deadline already past: the first long statement is interrupted.
    app = create_app(ViewConfig(store_url=str(store_file), time_limit_s=0.0))
    with TestClient(app, base_url=LOCAL) as c:
        page = c.get("/cases")
    assert page.status_code == 503
    assert "past the viewer's limit" in text_of(page.text)


def test_off_loopback_every_request_needs_the_token(store_file: Path) -> None:
    app = create_app(ViewConfig(store_url=str(store_file), token="s3cret-token"))
    with TestClient(app, base_url="http://192.0.2.10") as c:
        assert c.get("/runs").status_code == 401
        assert c.get("/cases/shop/steady").status_code == 401
        assert c.get("/runs", params={"token": "wrong"}).status_code == 403
        assert c.get("/runs", headers={"authorization": "Bearer wrong"}).status_code == 401
        assert c.get("/runs", headers={"authorization": "Bearer s3cret-token"}).status_code == 200
        # The token in the address is traded for a cookie, and the address loses it.
        traded = c.get("/flaky", params={"token": "s3cret-token", "suite": "shop"},
                       follow_redirects=False)  # fmt: skip
        assert traded.status_code == 303
        assert traded.headers["location"] == "/flaky?suite=shop"
        assert "httponly" in traded.headers["set-cookie"].lower()
        assert c.get("/cases").status_code == 200  # the cookie now carries it
        c.cookies.clear()
        assert c.get("/cases", headers={"cookie": 'bad"cookie; ;;='}).status_code == 401
        c.cookies.clear()
        assert c.get("/cases").status_code == 401


def test_on_loopback_only_loopback_host_names_are_served(store_file: Path) -> None:
    app = create_app(ViewConfig(store_url=str(store_file)))
    with TestClient(app, base_url="http://localhost:8700") as c:
        assert c.get("/runs").status_code == 200
    # A page elsewhere that rebinds its own name to 127.0.0.1 still sends its own name.
    with TestClient(app, base_url="http://attacker.example") as c:
        assert c.get("/runs").status_code == 421


def _wait_for_url(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("evalctl view: http://"), line + (
        proc.stderr.read() if proc.stderr else ""
    )
    return line.split(": ", 1)[1].strip()


def serve(store: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "evalctl.cli", "view", "--store", str(store), "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _get(url: str, headers: dict[str, str] | None = None) -> int:
    import httpx2 as httpx

    deadline = time.monotonic() + 60
    while True:
        try:
            return httpx.get(url, headers=headers, follow_redirects=False, timeout=30).status_code
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def test_the_command_binds_loopback_and_prints_its_url(store_file: Path) -> None:
    proc = serve(store_file)
    try:
        url = _wait_for_url(proc)
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url)
        assert _get(url + "flaky") == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_command_off_loopback_generates_a_token_and_checks_it(store_file: Path) -> None:
    proc = serve(store_file, "--host", "0.0.0.0")
    try:
        url = _wait_for_url(proc)
        match = re.fullmatch(r"http://0\.0\.0\.0:(\d+)/\?token=([\w-]{20,})", url)
        assert match, url
        port, token = match.groups()
        assert _get(f"http://127.0.0.1:{port}/runs") == 401
        bearer = {"authorization": f"Bearer {token}"}
        assert _get(f"http://127.0.0.1:{port}/runs", bearer) == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_command_refuses_a_store_that_is_not_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(capsys, "view", "--store", str(tmp_path / "none.sqlite"))
    assert result.code == 2 and "no run store here" in result.err
    assert not (tmp_path / "none.sqlite").exists()


def test_static_site_has_every_page_with_links_that_resolve(
    store_file: Path, keys: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "site"
    result = run_cli(capsys, "view", "--store", str(store_file), "--static", str(out))
    assert result.code == 0, result.err
    assert f"to {out}" in result.out
    for page in ("index.html", "runs/index.html", "cases/index.html", "flaky/index.html",
                 "trends/shop/index.html", "cases/shop/steady/index.html",
                 f"runs/{keys[0]}/index.html"):  # fmt: skip
        assert (out / page).is_file(), page
    # Compare pages for consecutive runs only.
    compares = sorted(p.relative_to(out).parts[1:3] for p in out.glob("compare/*/*/index.html"))
    assert compares == sorted(itertools.pairwise(keys))
    steady = (out / "cases/shop/steady/index.html").read_text()
    assert re.findall(r'data-status="(\w+)"', steady).count("fail") == RUNS - BROKEN_AT + 1
    assert 'class="cp"' in steady
    for page in out.rglob("index.html"):
        html = page.read_text()
        assert "<script" not in html
        for tag, attrs in parse(html).tags:
            href = attrs.get("href")
            if tag == "a" and href and not href.startswith(("http:", "https:", "#")):
                assert (page.parent / href).resolve().is_file(), (page, href)


def test_static_file_names_never_leave_the_site() -> None:
    assert file_segment("run-1.x") == "run-1.x"
    for hostile in ("..", ".", "a/../../b", "~x", "é"):
        name = file_segment(hostile)
        assert "/" not in name and name not in (".", "..")
        assert re.fullmatch(r"[A-Za-z0-9_.~-]+", name)
    assert file_segment("a/b") != file_segment("a~2Fb")
    assert Links(static=True, depth=2).to("cases", "s", "a/b") == "../../cases/s/a~2Fb/index.html"
    assert Links().to("cases", "s", "a/b", a="x y") == "/cases/s/a%2Fb?a=x+y"


def test_a_chart_keeps_every_run_and_its_interval() -> None:
    chart = svg.line_chart(
        "pass rate", "%", ["1", "2", "3"],
        [svg.SeriesSpec("rate", "#000", [100.0, None, 50.0])],
        band=[(80.0, 100.0), None, (20.0, 80.0)], fixed=(0.0, 100.0),
    )  # fmt: skip
    assert len(chart.lines[0].dots) == 2  # the gap is a gap
    assert chart.band is not None and len(chart.band.split()) == 4
    assert chart.y_ticks[0].label == "0%" and chart.y_ticks[-1].label == "100%"
    assert svg.line_chart("x", "ms", [], []).empty


def test_help_imports_neither_starlette_nor_uvicorn() -> None:
    probe = (
        "import sys\n"
        "from evalctl.cli import app\n"
        "sys.argv = ['evalctl', '--help']\n"
        "try:\n"
        "    app.main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('LOADED=' + ','.join(m for m in ('starlette', 'uvicorn', 'jinja2') "
        "if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert "view" in out
    assert out.strip().endswith("LOADED=")


def test_report_html_links_to_the_viewer_where_view_url_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests import factories as f

    results = tmp_path / "run"
    results.mkdir()
    run = run_result(3)
    f.write_json(results / "results.json", run.model_dump(mode="json"))
    monkeypatch.chdir(tmp_path)
    plain = run_cli(capsys, "report", str(results), "--html", str(tmp_path / "plain.html"))
    assert plain.code == 0, plain.err
    assert "view.example" not in (tmp_path / "plain.html").read_text()
    (tmp_path / "evalctl.toml").write_text('[history]\nview_url = "http://view.example:8700/"\n')
    linked = run_cli(capsys, "report", str(results), "--html", str(tmp_path / "linked.html"))
    assert linked.code == 0, linked.err
    hrefs = {a.get("href") for t, a in parse((tmp_path / "linked.html").read_text()).tags}
    assert f"http://view.example:8700/runs/{run.run_id}" in hrefs
    assert "http://view.example:8700/cases/shop/steady" in hrefs
    assert "http://view.example:8700/trends/shop" in hrefs


def test_the_same_pages_on_postgresql(
    postgres_server: PostgresServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = postgres_server.new_database()
    build_store(url)
    with open_store(url) as store:
        keys = [r.id for r in reversed(queries.list_runs(store, limit=None))]
    with TestClient(create_app(ViewConfig(store_url=url)), base_url=LOCAL) as c:
        assert listed(c.get("/runs").text) == keys[::-1][:50]
        strip = c.get("/cases/shop/steady").text.split('id="strip"')[1].split("</div>")[0]
        statuses = re.findall(r'data-status="(\w+)"', strip)
        assert statuses == ["pass"] * (BROKEN_AT - 1) + ["fail"] * (RUNS - BROKEN_AT + 1)
        marked = strip.split('class="cp"')[1]
        assert re.findall(r'href="/runs/([0-9a-f]+)"', marked)[0] == keys[BROKEN_AT - 1]
        ranked = re.findall(r'href="/cases/shop/([\w-]+)"', c.get("/flaky").text)
        assert sorted(ranked[:2]) == ["coin-a", "coin-b"]
        compare = c.get(f"/compare/{keys[BROKEN_AT - 2]}/{keys[BROKEN_AT - 1]}").text
        assert "OK (exit 0, statistical gate)" in text_of(compare)
        run_page = c.get(f"/runs/{keys[-1]}").text
        assert "<script" not in run_page and "&lt;script&gt;" in run_page
    # The viewer's session reads only, and its statements are held to its time limit.
    store = open_read_only(url, 2.5)
    try:
        cur = store.conn.cursor()
        cur.execute("SHOW statement_timeout")
        assert cur.fetchone()[0] == "2500ms"
        with pytest.raises(Exception, match="read-only transaction"):
            cur.execute("DELETE FROM runs")
    finally:
        store.close()
    out = tmp_path / "site"
    done = run_cli(capsys, "view", "--store", url, "--static", str(out))
    assert done.code == 0, done.err
    assert len(list(out.glob("compare/*/*/index.html"))) == RUNS - 1


def test_a_run_page_shows_the_compare_verdicts_recorded_for_it(tmp_path: Path) -> None:
    from evalctl.history.record import record_verdict

    path = tmp_path / "h.sqlite"
    build_store(path, runs=2)
    folder = tmp_path / "results" / "run3"
    with open_store(str(path)) as store:
        key = record_run(store, run_result(3), Provenance(), source=folder).key
        record_verdict(
            store, "compare", str(folder / "results.json"), "fail", 1,
            {"baseline": "baselines/scripted.json", "results": str(folder / "results.json"),
             "summary": "quality gate failed: 1 regression (shop/<b>steady</b>)"},
            Provenance(),
        )  # fmt: skip
    with TestClient(create_app(ViewConfig(store_url=str(path))), base_url=LOCAL) as c:
        page = c.get(f"/runs/{key}").text
        other = c.get(f"/runs/{run_id(1)}").text
    verdict = text_of(page.split('id="verdict"')[1].split('id="cases"')[0])
    assert "FAILED (exit 1) against baselines/scripted.json" in verdict
    assert "1 regression (shop/<b>steady</b>)" in verdict and "<b>" not in page
    assert "no compare verdict recorded" in text_of(other)


def test_compare_page_gives_what_baseline_from_and_compare_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests import factories as f

    monkeypatch.chdir(tmp_path)
    store = tmp_path / "h.sqlite"
    folders = []
    with open_store(str(store)) as handle:
        for i in (BROKEN_AT - 1, BROKEN_AT):
            folder = tmp_path / f"run{i}"
            folder.mkdir()
            run = run_result(i)
            # A deterministic provider's cases are gated exactly: any pass -> fail gates.
            cases = [c.model_copy(update={"deterministic": True}) for c in run.cases]
            run = run.model_copy(update={"cases": cases})
            f.write_json(folder / "results.json", run.model_dump(mode="json"))
            record_run(handle, run, Provenance(), source=folder)
            folders.append(folder)
    base = run_cli(capsys, "baseline", "--from", str(folders[0]), "--out", "b.json",
                   "--min-pass-rate", "0", "--no-store")  # fmt: skip
    assert base.code == 0, base.err
    cli = run_cli(capsys, "compare", "b.json", str(folders[1]), "--no-store")
    with open_store(str(store)) as handle:
        keys = [r.id for r in reversed(queries.list_runs(handle, limit=None))]
    with TestClient(create_app(ViewConfig(store_url=str(store))), base_url=LOCAL) as c:
        page = text_of(c.get(f"/compare/{keys[0]}/{keys[1]}").text)
    assert cli.code == 1 and "shop/steady" in cli.err
    assert page.split("Verdict ", 1)[1].startswith("FAILED (exit 1,")
    assert "1 regression (shop/steady)" in page
    # Read from the results files themselves: the note on rebuilt runs is absent.
    assert "as the store records them" not in page


def test_the_token_redirect_stays_on_this_site() -> None:
    import asyncio

    from evalctl.view.app import Guard

    async def never(scope: object, receive: object, send: object) -> None:
        raise AssertionError("the app behind the guard is not reached")

    sent: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b""}

    scope = {
        "type": "http", "method": "GET", "path": "//elsewhere.example/x",
        "query_string": b"token=t0k3n&a=1", "headers": [(b"host", b"192.0.2.10")],
    }  # fmt: skip
    asyncio.run(Guard(never, "t0k3n")(scope, receive, send))  # type: ignore[arg-type]
    headers = dict(sent[0]["headers"])  # type: ignore[call-overload]
    assert sent[0]["status"] == 303
    assert headers[b"location"] == b"/elsewhere.example/x?a=1"


def test_an_empty_store_has_pages_that_say_so(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite"
    open_store(str(path)).close()
    with TestClient(create_app(ViewConfig(store_url=str(path))), base_url=LOCAL) as c:
        assert "0 runs in the store" in text_of(c.get("/").text)
        assert "no cases recorded" in text_of(c.get("/cases").text)
        assert "no flaky cases" in text_of(c.get("/flaky").text)
        assert c.get("/trends/shop").status_code == 404
        assert c.get("/cases/shop/steady").status_code == 404
    out = tmp_path / "site"
    with open_store(str(path)) as store:
        from evalctl.view.static import write_site

        site = write_site(store, out)
    assert site.pages == 4 and (out / "index.html").is_file()
