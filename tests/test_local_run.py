"""Runs on the real local daemon: a SIGKILL during one case's generation leaves every other
case intact, and the killed case is recorded as `error` with `server_crashed`."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.config import Settings
from evalctl.providers.local import LocalProvider
from evalctl.providers.wrapper import ProviderWrapper
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from tests.local_helpers import SLOW, THREADS, make_provider, unending_request, wait_until

VICTIM = "echo/story"

STORY_CASE = """
[[case]]
id = "story"
input = { prompt = "Write a very long story about a dragon who learns to cook. Go on and on." }
expected = { answer = "unused" }
"""


class KillDuringGeneration(ProviderWrapper[LocalProvider]):
    """Forwards to a real LocalProvider; SIGKILLs its daemon while every victim is generating.

    Each victim's first request is swapped for one that cannot end before its token limit;
    once the last victim is inside, the kill waits until the daemon reports as many requests
    in flight as there are victims (with as many workers as victims, those are theirs): no bet
    on how fast this machine is. A victim's retry is forwarded as it is."""

    def __init__(self, inner: LocalProvider, victims: set[str]):
        super().__init__(inner)
        self.victims = victims
        self.entered: set[str] = set()
        self.guard = threading.Lock()
        self.killed_pids: list[int] = []

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        with self.guard:
            first_time = request.tag in self.victims and request.tag not in self.entered
            if first_time:
                self.entered.add(request.tag)
            last_in = first_time and self.entered == self.victims
        if not first_time:
            return self.inner.complete(request, timeout=timeout)
        killer = None
        if last_in:
            pid = self.inner.ensure_running().pid
            assert pid is not None
            killer = threading.Thread(target=self._kill_when_in_flight, args=(pid,))
            killer.start()
        try:
            return self.inner.complete(unending_request(tag=request.tag), timeout=timeout)
        finally:
            if killer is not None:
                killer.join()

    def _kill_when_in_flight(self, pid: int) -> None:
        count = len(self.victims)
        wait_until(lambda: self.inner.status().in_flight >= count, SLOW, "the victims in flight")
        os.kill(pid, signal.SIGKILL)
        self.killed_pids.append(pid)


@pytest.fixture
def local() -> Iterator[LocalProvider]:
    provider = make_provider()
    yield provider
    provider.stop_daemon(grace_s=2)
    provider.close()


@pytest.fixture
def story_suite(echo_suite: Path) -> Path:
    echo_suite.write_text(echo_suite.read_text() + STORY_CASE)
    return echo_suite


@pytest.mark.model
@pytest.mark.parametrize("crash_retries", [0, 1])
def test_sigkill_mid_generation_marks_only_that_case(
    local: LocalProvider, story_suite: Path, tmp_path: Path, crash_retries: int
) -> None:
    provider = KillDuringGeneration(local, {VICTIM})
    request = RunRequest(
        paths=[story_suite],
        out_dir=tmp_path / "out",
        crash_retries=crash_retries,
        show_progress=False,
        timeout_s=300,
    )
    result = execute_run(request, Settings(), {}, provider_override=provider).result
    assert len(provider.killed_pids) == 1
    cases = {c.key: c for c in result.cases}
    assert set(cases) == {"echo/hello", "echo/shout", VICTIM}
    story = cases[VICTIM]
    assert story.server_crashed
    assert story.attempts[0].server_crashed
    assert story.attempts[0].status == "error"
    if crash_retries == 0:
        assert story.status == "error"
        assert (tmp_path / "out" / "repros" / "echo__story.json").is_file()
    else:
        # The retry ran on a respawned daemon and was scored (the answer is never "unused").
        assert len(story.attempts) == 2
        assert story.status == "fail"
        assert local.daemon_pid not in (None, provider.killed_pids[0])
    for key in ("echo/hello", "echo/shout"):
        assert cases[key].status in ("pass", "fail"), cases[key].error
        assert not cases[key].server_crashed
        # Why each turn's reply ended is recorded per attempt.
        assert cases[key].attempts[-1].stop_reasons
    # How the daemon ran is recorded with the provider (through the test's wrapper too).
    assert result.provider.settings["threads"] == THREADS
    assert result.provider.settings["prefix_cache"] is True


SECOND_STORY_CASE = STORY_CASE.replace('id = "story"', 'id = "saga"')


@pytest.mark.model
def test_a_crash_with_two_cases_in_flight_marks_both_and_retries_both(
    story_suite: Path, tmp_path: Path
) -> None:
    story_suite.write_text(story_suite.read_text() + SECOND_STORY_CASE)
    local = make_provider(parallel=2, n_threads=1)
    try:
        # With -j 2 the two workers end in the two victims, which cannot end on their own:
        # the two requests in flight at the kill are theirs.
        provider = KillDuringGeneration(local, {VICTIM, "echo/saga"})
        request = RunRequest(
            paths=[story_suite],
            out_dir=tmp_path / "out",
            concurrency=2,
            crash_retries=1,
            show_progress=False,
            timeout_s=300,
        )
        result = execute_run(request, Settings(), {}, provider_override=provider).result
    finally:
        local.stop_daemon(grace_s=2)
        local.close()
    assert len(provider.killed_pids) == 1
    cases = {c.key: c for c in result.cases}
    for key in (VICTIM, "echo/saga"):
        # Both were in flight when the daemon died: each attributed, each retried and scored.
        assert cases[key].attempts[0].server_crashed, key
        assert len(cases[key].attempts) == 2, key
        assert cases[key].status == "fail", key
    for key in ("echo/hello", "echo/shout"):
        assert not cases[key].server_crashed, key
        assert cases[key].status in ("pass", "fail"), cases[key].error
    assert result.provider.settings["parallel"] == 2
