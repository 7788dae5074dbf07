"""Skip conditions in `requires`: `env:NAME`, `host:NAME`, `tcp:HOST:PORT`, `http:URL`, with
`${VAR}` expanded. Unmet, every case of the suite is `skipped` with the reason, for any
provider or target (an http target whose URL variable is unset included); met, the suite
runs. The network conditions are tried against real loopback sockets."""

from __future__ import annotations

import http.server
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalctl.cases.loader import load_suite
from evalctl.cases.requirements import condition_problem, unmet_condition
from evalctl.config import Settings
from evalctl.errors import BadInputError, ExitCode
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from tests.target_helpers import NO_SLEEP, run_suite, serving, unique, write


@pytest.fixture
def listening() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    try:
        yield server.getsockname()[1]
    finally:
        server.close()


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 nothing listens on (bound, then released)."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = int(probe.getsockname()[1])
    probe.close()
    return port


class _Status(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(503 if self.path.startswith("/down") else 404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def web() -> Iterator[str]:
    with serving(http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Status)) as server:
        yield f"http://127.0.0.1:{server.server_address[1]}"


def test_env_and_host(monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"SET": "x", "EMPTY": ""}
    assert unmet_condition("env:SET", env) is None
    assert unmet_condition("env:EMPTY", env) == "environment variable EMPTY is not set"
    assert unmet_condition("env:MISSING", env) == "environment variable MISSING is not set"
    assert unmet_condition("host:localhost", env) is None
    assert "does not resolve" in (unmet_condition("host:no-such-host.invalid", env) or "")


def test_tcp_with_a_variable(listening: int, closed_port: int) -> None:
    env = {"DB_PORT": str(listening)}
    assert unmet_condition("tcp:127.0.0.1:${DB_PORT}", env) is None
    refused = unmet_condition(f"tcp:127.0.0.1:{closed_port}", env)
    assert refused is not None and "nothing accepts connections" in refused
    assert unmet_condition("tcp:127.0.0.1:${NOPE}", env) == ("environment variable NOPE is not set")


def test_http_answers_below_500(web: str, closed_port: int) -> None:
    assert unmet_condition(f"http:{web}/health", {}) is None  # a 404 is an answer
    assert unmet_condition(f"http:{web}/down", {}) == f"{web}/down answered 503"
    down = unmet_condition(f"http:http://127.0.0.1:{closed_port}/", {})
    assert down is not None and "did not answer" in down


@pytest.mark.parametrize(
    ("need", "needle"),
    [
        ("env:", "needs a value"),
        ("env:not a name", "not a variable name"),
        ("tcp:localhost", "tcp:HOST:PORT"),
        ("tcp:localhost:http", "not a port"),
        ("tcp:localhost:70000", "not a port"),
        ("http:ftp://x", "not an http"),
    ],
)
def test_malformed_conditions_are_refused(need: str, needle: str) -> None:
    problem = condition_problem(need)
    assert problem is not None and needle in problem
    assert condition_problem("tcp:${HOST}:${PORT}") is None
    assert condition_problem("http:${APP_URL}/health") is None


def _suite(tmp_path: Path, requires: str, target: str = "") -> Path:
    app = unique("reqapp")
    write(tmp_path / f"{app}.py", "def answer(doc):\n    return 'ok'\n")
    return write(
        tmp_path / "suite.toml",
        f"""
        [suite]
        name = "needs"
        kind = "assert"
        requires = {requires}
        {target or f'target = {{ type = "python", function = "{app}:answer" }}'}

        [[case]]
        id = "one"
        input = {{ prompt = "hi" }}
        [[case.assert]]
        type = "contains"
        value = "ok"

        [[case]]
        id = "two"
        input = {{ prompt = "hi" }}
        [[case.assert]]
        type = "contains"
        value = "ok"
        """,
    )


def test_a_malformed_condition_is_exit_2_naming_the_field(tmp_path: Path) -> None:
    with pytest.raises(BadInputError) as info:
        load_suite(_suite(tmp_path, '["tcp:db"]'))
    assert info.value.code is ExitCode.BAD_INPUT
    assert info.value.field == "suite.requires"
    assert "tcp:HOST:PORT" in info.value.message


def test_unmet_conditions_skip_every_case_with_the_reason(
    tmp_path: Path, listening: int, closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVALCTL_TEST_KEY", raising=False)
    suite = _suite(tmp_path, '["env:EVALCTL_TEST_KEY"]')
    cases = run_suite(suite, tmp_path / "a").cases
    assert [c.status for c in cases] == ["skipped", "skipped"]
    assert cases[0].skip_reason == (
        "requirement 'env:EVALCTL_TEST_KEY' not met: environment variable EVALCTL_TEST_KEY "
        "is not set"
    )
    monkeypatch.setenv("EVALCTL_TEST_KEY", "k")
    assert [c.status for c in run_suite(suite, tmp_path / "b").cases] == ["pass", "pass"]

    suite = _suite(tmp_path, f'["tcp:127.0.0.1:{closed_port}"]')
    (first, _) = run_suite(suite, tmp_path / "c").cases
    assert first.status == "skipped"
    assert first.skip_reason is not None and "nothing accepts connections" in first.skip_reason
    suite = _suite(tmp_path, f'["tcp:127.0.0.1:{listening}"]')
    assert [c.status for c in run_suite(suite, tmp_path / "d").cases] == ["pass", "pass"]


def test_an_http_target_whose_url_variable_is_unset_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVALCTL_TEST_APP_URL", raising=False)
    target = 'target = { type = "http", url = "${EVALCTL_TEST_APP_URL}/answer" }'
    suite = _suite(tmp_path, '["env:EVALCTL_TEST_APP_URL"]', target)
    env = dict(os.environ)
    result = run_suite(suite, tmp_path / "out", env=env)
    assert [c.status for c in result.cases] == ["skipped", "skipped"]
    assert result.cases[0].skip_reason is not None
    assert "EVALCTL_TEST_APP_URL is not set" in result.cases[0].skip_reason
    assert result.provider.name == "http"
    # Without a condition that covers it, the unset variable is still bad input.
    suite = _suite(tmp_path, "[]", target)
    with pytest.raises(BadInputError) as info:
        run_suite(suite, tmp_path / "out2", env=env)
    assert "EVALCTL_TEST_APP_URL is not set" in info.value.message


def test_conditions_skip_on_a_model_provider_too(tmp_path: Path, closed_port: int) -> None:
    suite = _suite(tmp_path, f'["tcp:127.0.0.1:{closed_port}"]', target=" ")
    script = write(tmp_path / "scripts" / "replies.toml", '[[default]]\ncontent = "ok"\n')
    request = RunRequest(
        provider="scripted", script=script, paths=[suite], out_dir=tmp_path / "out",
        show_progress=False,
    )  # fmt: skip
    result = execute_run(request, Settings(), {}, retry=NO_SLEEP).result
    assert [c.status for c in result.cases] == ["skipped", "skipped"]
