"""Whole runs on the cloud providers: the runner, the real SDKs and the fake server together."""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalctl.config import Settings
from evalctl.fakes.llm_server import FakeLLMServer, RecordedRequest, Step
from evalctl.results.models import CaseResult
from evalctl.retry import RetryPolicy
from evalctl.runner.api import RunOutcome, RunRequest
from evalctl.runner.execute import execute_run
from tests.cloud_helpers import ANTHROPIC_KEY, GOOGLE_KEY, OPENAI_KEY

NO_SLEEP = RetryPolicy(max_attempts=3, sleep=lambda _s: None, rng=random.Random(0))
_CASE = re.compile(r"case (\d+)")


def echo_suite_with(n: int, directory: Path) -> Path:
    """N cases of the test-only echo kind; every third one needs the `upper` tool."""
    lines = [
        "[suite]",
        'name = "many"',
        'kind = "echo"',
        'system_prompt = "Answer exactly."',
        'tools = ["upper"]',
        "max_turns = 3",
    ]
    for i in range(n):
        answer = f"ANSWER{i}" if i % 3 == 0 else f"answer{i}"
        lines += ["", "[[case]]", f'id = "c{i:03d}"', f'input = {{ prompt = "case {i}" }}']
        lines.append(f'expected = {{ answer = "{answer}" }}')
    path = directory / "many.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def responder(req: RecordedRequest) -> Step:
    """Answers `case N` (every third by way of the upper tool); case 7 is always wrong."""
    match = _CASE.search(req.first_user_text())
    i = int(match.group(1)) if match else -1
    if i == 7:
        return Step.reply("wrong")
    if i % 3 != 0:
        return Step.reply(f"answer{i}")
    if req.assistant_turns() == 0:
        return Step.tool("upper", {"text": f"answer{i}"})
    return Step.reply(f"ANSWER{i}")


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(responder=responder) as srv:
        yield srv


def run(
    server: FakeLLMServer, suite: Path, out: Path, provider: str, concurrency: int
) -> RunOutcome:
    env = server.env(anthropic_key=ANTHROPIC_KEY, google_key=GOOGLE_KEY, openai_key=OPENAI_KEY)
    models = {"anthropic": "claude-test", "gemini": "gemini-test", "openai": "gpt-test"}
    request = RunRequest(
        provider=provider,
        model=models[provider],
        paths=[suite],
        out_dir=out,
        concurrency=concurrency,
        show_progress=False,
    )
    return execute_run(request, Settings(), env, retry=NO_SLEEP)


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "openai"])
def test_concurrent_results_equal_serial_results(
    echo_suite: Path, tmp_path: Path, server: FakeLLMServer, provider: str
) -> None:
    suite = echo_suite_with(24, tmp_path)
    serial = run(server, suite, tmp_path / "serial", provider, concurrency=1).result
    parallel = run(server, suite, tmp_path / "parallel", provider, concurrency=8).result

    def view(cases: list[CaseResult]) -> list[tuple[str, str, str, int, list[str]]]:
        return [(c.key, c.status, c.output, c.turns, [t.name for t in c.tool_calls]) for c in cases]

    assert view(parallel.cases) == view(serial.cases)
    assert serial.summary.failed == 1 and serial.summary.passed == 23
    assert serial.summary.usage.input_tokens > 0


class InFlight:
    """Counts requests the fake server holds at once. Each waits until `target` are in
    flight together, so a runner that kept fewer open would never get there: concurrency is
    proven by the count, not by a wall-clock ratio (speed lives in benchmarks/)."""

    def __init__(self, target: int):
        self.target = target
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0
        self.reached = threading.Event()

    def responder(self, req: RecordedRequest) -> Step:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
            if self.now >= self.target:
                self.reached.set()
        try:
            # A guard against a runner that never opens `target` requests, not a timing.
            self.reached.wait(60)
            return responder(req)
        finally:
            with self.lock:
                self.now -= 1


def test_concurrency_16_keeps_16_requests_in_flight(
    echo_suite: Path, tmp_path: Path, server: FakeLLMServer
) -> None:
    counter = InFlight(16)
    server.set_responder(counter.responder)
    suite = echo_suite_with(40, tmp_path)
    outcome = run(server, suite, tmp_path / "out", "anthropic", concurrency=16)
    assert outcome.result.summary.total == 40
    assert outcome.result.summary.failed == 1  # case 7, as in a serial run
    assert counter.reached.is_set()
    assert counter.peak == 16  # all at once, and never more than asked


@pytest.mark.parametrize("provider", ["anthropic", "gemini", "openai"])
def test_a_run_leaves_no_trace_of_the_key(
    echo_suite: Path,
    tmp_path: Path,
    server: FakeLLMServer,
    provider: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Faults that are retried, and one case whose every attempt hits an auth error echoing
    the key: the key is found nowhere under the run directory or in the output."""
    suite = echo_suite_with(6, tmp_path)
    server.enqueue(
        Step.failing("rate_limit", retry_after=0),
        Step.failing("malformed"),
        Step.failing("drop"),
        Step.failing("auth"),
    )
    out = tmp_path / "out"
    outcome = run(server, suite, out, provider, concurrency=1)
    statuses = [c.status for c in outcome.result.cases]
    assert "error" in statuses  # the auth error is permanent: that case ends as `error`
    errors = [c.error or "" for c in outcome.result.cases if c.status == "error"]
    assert any("invalid API key" in e and "[REDACTED" in e for e in errors)
    key = {"anthropic": ANTHROPIC_KEY, "gemini": GOOGLE_KEY, "openai": OPENAI_KEY}[provider]
    assert any(key in str(r.headers) for r in server.requests)  # the key was really used
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert key not in path.read_text(errors="replace"), path
    captured = capsys.readouterr()
    assert key not in captured.out + captured.err
