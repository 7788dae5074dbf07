"""`evalctl crash-test` on the embedded model: two SIGKILLs, one mid-generation and one
between requests, each detected by the client and recovered by a respawned daemon."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from evalctl.lifecycle import procs
from evalctl.results.document import load_document
from evalctl.stability.models import crash_from_document
from tests.cli_helpers import run_cli
from tests.local_helpers import embedded_model, held_lock_pids
from tests.stability_helpers import one_thread  # noqa: F401  (fixture)


@pytest.mark.model
def test_two_kills_one_mid_generation_recover(
    one_thread: None,  # noqa: F811
    evalctl_home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "crash"
    done = run_cli(
        capsys,
        "crash-test",
        "--kills",
        "2",
        "--mid-generation",
        "--timeout",
        "180",
        "--out",
        str(out),
        "--json",
    )
    assert done.code == 0, done.err + done.out
    result = crash_from_document(load_document(out))
    assert json.loads(done.out)["result"]["crash_id"] == result.crash_id
    assert result.passed and result.error is None
    assert result.probe.ok

    mid, between = result.kills
    assert (mid.mode, between.mode) == ("mid-generation", "between-requests")
    # The runner restarts a case on exactly this error.
    assert mid.failure_seen.startswith("ServerCrashedError"), mid.failure_seen
    assert "not running" in between.failure_seen
    pids = [result.probe.pid]
    for kill in (mid, between):
        assert kill.detected and kill.recovered, kill.error
        assert kill.killed_pid == pids[-1]  # the daemon that served last was the one killed
        assert kill.new_pid is not None and kill.new_pid not in pids
        pids.append(kill.new_pid)
        # SIGKILL leaves the socket file behind; the kernel frees the flock; the respawned
        # daemon replaced the one and holds the other.
        assert kill.stale_socket_left and kill.lock_released and kill.lock_owner_ok
        assert kill.detection_ms is not None and kill.detection_ms >= 0
        assert kill.recovery_ms is not None and kill.recovery_ms > 0
    assert result.summary.recovered == 2
    assert result.summary.recovery_max_ms >= result.summary.recovery_ms.p50 > 0

    env = result.environment
    assert env.model_sha256 == embedded_model().expected_sha256
    assert env.host and env.cpu and env.ram_bytes > 0 and env.evalctl and env.llama_cpp

    assert tomllib.loads((out / "crash-test.toml").read_text())["kind"] == "crash-test"
    assert "crash-test" in (out / "crash-test.html").read_text()
    # Every daemon of the test is gone, the last one stopped by the command itself.
    assert not any(procs.alive(pid) for pid in pids)
    assert held_lock_pids(evalctl_home) == []


def test_kills_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    done = run_cli(capsys, "crash-test", "--kills", "0")
    assert done.code == 2
