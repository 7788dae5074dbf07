"""The http target against a real local server (stdlib http.server on a real socket): the
answer, usage and reported calls read by path, one kept-alive connection reused, 429/500/a
timeout retried under the retry policy and ending as `error` (exit 3, never a regression),
and a header secret written nowhere."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from evalctl.errors import BadInputError
from tests.cli_helpers import evalctl
from tests.target_helpers import run_suite, serving, write

SECRET = "hunter2-not-a-secret-looking-name"


class App(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.requests: list[tuple[str, dict[str, Any], str]] = []
        self.connections = 0
        self.failures: dict[str, int] = {}  # path -> how many more requests fail

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: App

    def setup(self) -> None:
        super().setup()
        self.server.connections += 1

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        auth = self.headers.get("Authorization", "")
        self.server.requests.append((self.path, body, auth))
        left = self.server.failures.get(self.path, 0)
        if self.path == "/slow":
            time.sleep(1.0)
        if self.path == "/always429" or left:
            self.server.failures[self.path] = left - 1
            status = 429 if self.path == "/always429" else 500
            return self._send(status, {"error": f"no ({auth})"}, {"Retry-After": "0"})
        question = body["q"]
        reply = {
            "data": {"answers": [{"text": f"echo: {question} ({auth})"}]},
            "meta": {"tokens": {"in": 3, "out": 5}},
            "calls": [{"name": "lookup", "arguments": {"q": question}, "result": {"n": 1}}],
        }
        self._send(200, reply)

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def app() -> Iterator[App]:
    with serving(App()) as server:
        yield server


def _suite(tmp_path: Path, path: str, cases: int = 1, timeout: str = "5") -> Path:
    case_tables = "".join(
        f"""
        [[case]]
        id = "c{i}"
        input = {{ prompt = "question {i}" }}
        [[case.assert]]
        type = "contains"
        value = "echo: question {i}"
        [[case.assert]]
        type = "tool-called"
        name = "lookup"
        """
        for i in range(cases)
    )
    return write(
        tmp_path / "suite.toml",
        f"""
        [suite]
        name = "web"
        kind = "assert"

        [[suite.target]]
        type = "http"
        url = "${{APP_URL}}{path}"
        headers = {{ Authorization = "Bearer ${{APP_AUTH}}" }}
        body = {{ q = "{{{{prompt}}}}", case = "{{{{case}}}}" }}
        answer = "$.data.answers[0].text"
        usage = {{ input_tokens = "meta.tokens.in", output_tokens = "meta.tokens.out" }}
        tool_calls = "calls"
        tools = ["lookup"]
        timeout_s = {timeout}
        """
        + case_tables,
    )


def _env(app: App) -> dict[str, str]:
    return {"APP_URL": app.url, "APP_AUTH": SECRET}


def test_answer_usage_and_calls_by_path_on_one_connection(tmp_path: Path, app: App) -> None:
    result = run_suite(_suite(tmp_path, "/answer", cases=3), tmp_path / "out", env=_env(app))
    assert [c.status for c in result.cases] == ["pass", "pass", "pass"]
    first = result.cases[0]
    assert first.usage.input_tokens == 3 and first.usage.output_tokens == 5
    assert first.tool_calls[0].arguments == {"q": "question 0"}
    assert app.requests[0] == ("/answer", {"q": "question 0", "case": "web/c0"}, f"Bearer {SECRET}")
    assert len(app.requests) == 3 and app.connections == 1  # kept alive, reused


def test_concurrent_cases_share_the_provider(tmp_path: Path, app: App) -> None:
    suite = _suite(tmp_path, "/answer", cases=6)
    result = run_suite(suite, tmp_path / "out", env=_env(app), concurrency=3)
    assert [c.status for c in result.cases] == ["pass"] * 6
    assert len(app.requests) == 6 and 1 <= app.connections <= 3


def test_a_500_is_retried_then_answers(tmp_path: Path, app: App) -> None:
    app.failures["/answer"] = 2
    (case,) = run_suite(_suite(tmp_path, "/answer"), tmp_path / "out", env=_env(app)).cases
    assert case.status == "pass" and len(app.requests) == 3


@pytest.mark.parametrize(("path", "failures", "why"), [
    ("/always429", 0, "HTTP 429"),
    ("/answer", 99, "HTTP 500"),
    ("/slow", 0, "did not answer within 0.2 s"),
])  # fmt: skip
def test_retries_exhausted_end_in_error(
    tmp_path: Path, app: App, path: str, failures: int, why: str
) -> None:
    app.failures[path] = failures
    suite = _suite(tmp_path, path, timeout="0.2")
    (case,) = run_suite(suite, tmp_path / "out", env=_env(app)).cases
    assert case.status == "error" and case.error is not None and why in case.error
    assert len(app.requests) == 3  # NO_SLEEP allows three attempts


def test_unset_header_variable_is_bad_input(tmp_path: Path, app: App) -> None:
    with pytest.raises(BadInputError, match="APP_AUTH is not set") as bad:
        run_suite(_suite(tmp_path, "/answer"), tmp_path / "out", env={"APP_URL": app.url})
    assert bad.value.field == "suite.target[1].headers.Authorization"


def test_cli_error_not_regression_and_no_secret_written(
    tmp_path: Path, app: App, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _suite(tmp_path, "/answer", cases=2)
    monkeypatch.setenv("APP_URL", app.url)
    monkeypatch.setenv("APP_AUTH", SECRET)  # a name that does not look secret
    made = evalctl(tmp_path, "baseline", "--cases", str(suite), "--json")
    assert made.returncode == 0, made.stderr
    baseline = tmp_path / "baselines" / "http.json"
    assert baseline.is_file()
    # The server now refuses every request: retried (Retry-After: 0), then `error`.
    broken = write(
        tmp_path / "broken" / "suite.toml", suite.read_text().replace("/answer", "/always429")
    )
    ran = evalctl(tmp_path, "run", "--cases", str(broken), "--out", "now")
    assert ran.returncode == 3, ran.stdout + ran.stderr
    compared = evalctl(tmp_path, "compare", "--gate", "strict", str(baseline), "now")
    assert compared.returncode != 1, compared.stdout + compared.stderr
    assert "unscored" in compared.stdout + compared.stderr
    assert app.requests and all(auth == f"Bearer {SECRET}" for _, _, auth in app.requests)
    # The server echoed the header into answers and errors: nothing evalctl wrote keeps it.
    for output in (made, ran, compared):
        assert SECRET not in output.stdout + output.stderr
    home = Path(os.environ["EVALCTL_HOME"])
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".toml"]
    written += [p for p in home.rglob("*") if p.is_file()]
    assert any(p.name == "results.json" for p in written)
    for path in written:
        assert SECRET not in path.read_text(errors="replace"), path
