"""`requires` conditions, round 4: an `http:` server that trickles its headers is cut off at a
total deadline; a condition's `${VAR}` values never reach any output (the run table on
stdout, `--json`, results, journal); an `http:` URL that cannot parse is refused at load
(exit 2 from `cases validate`); and a condition that several suites share is checked once
per run. Every network condition is tried against a real socket on 127.0.0.1."""

from __future__ import annotations

import http.server
import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalctl.cases import requirements
from evalctl.cases.requirements import ConditionChecks, condition_problem, unmet_condition
from evalctl.config import Settings
from evalctl.errors import ExitCode
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from tests.cli_helpers import run_cli
from tests.target_helpers import NO_SLEEP, serving, unique, write


@pytest.fixture
def trickling() -> Iterator[tuple[int, list[bool]]]:
    """A server on 127.0.0.1 that answers a status line, then one header byte every 50 ms for
    as long as the client stays: no single read ever waits long. Yields its port and a list
    that gets `True` once the client cut the connection."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()
    cut: list[bool] = []

    def serve() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            conn.recv(4096)
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            while not stop.wait(0.05):
                try:
                    conn.sendall(b"a")
                except OSError:
                    cut.append(True)
                    return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], cut
    finally:
        stop.set()
        server.close()
        thread.join(10)


def test_a_server_trickling_its_headers_is_cut_off_at_the_deadline(
    trickling: tuple[int, list[bool]], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, _ = trickling
    # Longer than the pause between two bytes: a per-read timeout alone would wait forever.
    monkeypatch.setattr(requirements, "HTTP_TIMEOUT_S", 0.5)
    problem = unmet_condition(f"http:http://127.0.0.1:{port}/health", {})
    assert problem == f"http://127.0.0.1:{port}/health did not answer within 0.5 s"


def test_a_server_that_answers_in_time_still_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    with serving(http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)) as server:
        url = f"http://127.0.0.1:{server.server_address[1]}/health"
        assert unmet_condition(f"http:{url}", {}) is None


@pytest.mark.parametrize(
    "url",
    [
        "http://[::1/health",  # an unclosed IPv6 bracket
        "http://127.0.0.1:99999/",  # a port out of range
        "http://127.0.0.1:port/",  # a port that is no number
        "http:///health",  # no host
    ],
)
def test_an_unparsable_http_url_is_refused_at_validate(
    tmp_path: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert condition_problem(f"http:{url}") is not None
    suite = _suite(tmp_path / "s", "needs", f'["http:{url}"]')
    done = run_cli(capsys, "cases", "validate", str(suite))
    assert done.code == ExitCode.BAD_INPUT, done.out + done.err
    assert "suite.requires" in done.err and "Traceback" not in done.err


def test_urls_with_variables_are_checked_around_them() -> None:
    assert condition_problem("http:${APP_URL}/health") is None
    assert condition_problem("http:http://${HOST}:${PORT}/health") is None
    assert condition_problem("http:http://[::1]:8080/health") is None
    assert condition_problem("http:http://${HOST}:99999/") is not None


def test_an_expanded_url_that_does_not_parse_skips_instead_of_crashing() -> None:
    problem = unmet_condition("http:http://${WHERE}/", {"WHERE": "[::1"})
    assert problem is not None and "[::1" not in problem and "${WHERE}" in problem


SHORT_TOKEN = "q7zx9"  # shorter than any redaction by value: only the source can hide it


def test_a_condition_never_shows_a_variables_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MY_TOKEN", SHORT_TOKEN)
    suite = _suite(tmp_path / "s", "needs", '["tcp:${MY_TOKEN}:1"]')
    out = tmp_path / "out"
    done = run_cli(capsys, "run", "--cases", str(suite), "--out", str(out), "--no-progress")
    assert done.code == 0, done.err
    assert "skipped" in done.out and "${MY_TOKEN}" in done.out
    json_out = tmp_path / "json"
    as_json = run_cli(
        capsys, "run", "--cases", str(suite), "--out", str(json_out), "--no-progress", "--json"
    )
    assert as_json.code == 0, as_json.err
    reason = json.loads(as_json.out)["cases"][0]["skip_reason"]
    assert reason.startswith("requirement 'tcp:${MY_TOKEN}:1' not met")
    written = [
        done.out,
        done.err,
        as_json.out,
        (out / "results.json").read_text(),
        (out / "journal.jsonl").read_text(),
    ]
    for text in written:
        assert SHORT_TOKEN not in text


def test_the_host_value_stays_hidden_in_an_error_text() -> None:
    problem = unmet_condition("host:${EVALCTL_TEST_HIDDEN}", {"EVALCTL_TEST_HIDDEN": "zz..zz"})
    assert problem is not None and "zz..zz" not in problem
    assert "${EVALCTL_TEST_HIDDEN}" in problem


class _Counting(http.server.BaseHTTPRequestHandler):
    hits = 0

    def do_GET(self) -> None:
        type(self).hits += 1
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def test_a_condition_shared_by_suites_is_checked_once_per_run(tmp_path: Path) -> None:
    handler = type("Counter", (_Counting,), {"hits": 0})
    with serving(http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)) as server:
        need = f'["http:http://127.0.0.1:{server.server_address[1]}/health"]'
        suites = [_suite(tmp_path / name, name, need) for name in ("first", "second", "third")]
        request = RunRequest(paths=suites, out_dir=tmp_path / "out", show_progress=False)
        result = execute_run(request, Settings(), {}, retry=NO_SLEEP).result
        assert [c.status for c in result.cases] == ["pass"] * 3
        assert handler.hits == 1
        # A second run checks again: the answer is the run's, not the process's.
        execute_run(
            RunRequest(paths=suites, out_dir=tmp_path / "again", show_progress=False),
            Settings(),
            {},
            retry=NO_SLEEP,
        )
        assert handler.hits == 2


def test_condition_checks_keep_each_answer() -> None:
    checks = ConditionChecks({"SET": "x"})
    assert checks.unmet("env:SET") is None
    assert checks.unmet("env:UNSET") == "environment variable UNSET is not set"
    assert checks.unmet("env:UNSET") == "environment variable UNSET is not set"


def _suite(directory: Path, name: str, requires: str) -> Path:
    app = unique("req4app")
    write(directory / f"{app}.py", "def answer(doc):\n    return 'ok'\n")
    return write(
        directory / f"{name}.toml",
        f"""
        [suite]
        name = "{name}"
        kind = "assert"
        requires = {requires}
        target = {{ type = "python", function = "{app}:answer" }}

        [[case]]
        id = "one"
        input = {{ prompt = "hi" }}
        [[case.assert]]
        type = "contains"
        value = "ok"
        """,
    )
