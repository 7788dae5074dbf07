"""The daemon's lifecycle with a real daemon process: start, ready, status, stop, the lock,
stale files, idle exit, SIGTERM, permissions, long paths and start-up failures."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from evalctl import flock
from evalctl.config import load_settings
from evalctl.lifecycle import procs
from evalctl.lifecycle.manager import DaemonManager, DaemonStartError
from evalctl.lifecycle.paths import SOCKET_PATH_MAX, daemon_paths, short_run_dir_path
from evalctl.server import convert
from evalctl.server.jsonlog import read_events
from evalctl.server.options import DaemonOptions
from tests.local_helpers import (
    SLOW,
    embedded_model,
    make_manager,
    manager,  # noqa: F401  (fixture)
    reap_daemons,  # noqa: F401  (fixture)
    spec,
    unending_request,
    wait_until,
)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_start_ready_status_stop(manager: DaemonManager, evalctl_home: Path) -> None:  # noqa: F811
    status = manager.ensure_running()
    assert status.running and status.ready
    assert status.pid is not None and procs.alive(status.pid)
    model = embedded_model()
    assert status.model_sha256 == model.expected_sha256
    assert status.model_name == model.name
    assert status.model_size_bytes == model.path.stat().st_size
    assert status.n_ctx == 4096
    assert status.backend == "llama.cpp" and status.backend_version
    assert status.uptime_s > 0

    paths = manager.paths
    assert paths.socket == evalctl_home / "run" / f"{model.expected_sha256[:12]}.sock"
    # Permissions: the socket is born 0600, every directory under the home is 0700.
    assert stat.S_ISSOCK(os.stat(paths.socket).st_mode)
    assert _mode(paths.socket) == 0o600
    for directory in (evalctl_home, evalctl_home / "run", evalctl_home / "logs"):
        assert _mode(directory) == 0o700
    assert flock.read_pid(paths.lock) == status.pid
    assert flock.is_locked(paths.lock)

    # A second ensure_running finds the same daemon rather than starting another.
    assert manager.ensure_running().pid == status.pid
    assert manager.status().pid == status.pid

    result = manager.stop(grace_s=5)
    assert result.stopped and result.how == "shutdown" and result.pid == status.pid
    assert not procs.alive(status.pid)
    assert not paths.socket.exists() and not paths.lock.exists()
    assert not manager.status().running
    events = [e["event"] for e in read_events(paths.log)]
    assert events[:4] == ["starting", "listening", "ready", "shutdown_requested"]
    assert events[-1] == "exited"


def test_the_lock_stops_a_second_daemon(manager: DaemonManager) -> None:  # noqa: F811
    first = manager.ensure_running()
    inode = os.stat(manager.paths.socket).st_ino
    model = embedded_model()
    # A second daemon on the same socket, started by hand: it must refuse, not steal.
    options = DaemonOptions(model_path=model.path, socket_path=manager.paths.socket, n_ctx=512)
    second = subprocess.run(
        [sys.executable, "-m", "evalctl.server", *options.to_argv()],
        capture_output=True,
        timeout=SLOW,
    )
    assert second.returncode == 3
    assert "already holds" in second.stderr.decode()
    assert os.stat(manager.paths.socket).st_ino == inode
    assert manager.status().pid == first.pid
    assert manager.status().ready


def test_two_managers_share_one_daemon(reap_daemons: None) -> None:  # noqa: F811
    # As two evalctl processes would: both ask at once, one spawns, the other waits.
    managers = [make_manager(), make_manager()]
    pids: list[int | None] = [None, None]

    def start(i: int) -> None:
        pids[i] = managers[i].ensure_running().pid

    threads = [threading.Thread(target=start, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(SLOW)
    assert pids[0] is not None and pids[0] == pids[1]
    assert managers[0].stop(grace_s=2).stopped


def test_stale_socket_and_lock_are_cleaned(manager: DaemonManager) -> None:  # noqa: F811
    paths = manager.paths
    # What a SIGKILLed daemon leaves: a socket nobody listens on and an unlocked lock file.
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(paths.socket))
    stale.close()
    paths.lock.write_text("999999\n")
    assert paths.socket.exists()
    status = manager.ensure_running()
    assert status.ready
    assert flock.read_pid(paths.lock) == status.pid


def test_idle_timeout_exits_and_removes_its_files(reap_daemons: None) -> None:  # noqa: F811
    mgr = make_manager(idle_timeout_s=1.0)
    status = mgr.ensure_running()
    assert status.pid is not None
    wait_until(lambda: not procs.alive(status.pid, mgr._proc), SLOW, "the idle daemon to exit")
    assert not mgr.paths.socket.exists()
    assert not mgr.paths.lock.exists()
    exits = [e for e in read_events(mgr.paths.log) if e["event"] == "stopping"]
    assert exits[-1]["reason"] == "idle_timeout"


def test_sigterm_finishes_in_flight_work(reap_daemons: None) -> None:  # noqa: F811
    mgr = make_manager(grace_s=SLOW)
    status = mgr.ensure_running()
    assert status.pid is not None
    # Cannot end before 64 tokens: still in flight when SIGTERM lands, on any machine.
    request = unending_request(max_tokens=64)
    outcome: dict[str, object] = {}

    def call() -> None:
        try:
            reply = mgr.client().complete(
                convert.request_to_pb(request, timeout_s=SLOW), timeout=SLOW
            )
            outcome["response"] = convert.response_from_pb(reply)
        except Exception as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=call)
    worker.start()
    wait_until(lambda: mgr.status().in_flight == 1, SLOW, "the request to be in flight")
    os.kill(status.pid, signal.SIGTERM)
    worker.join(SLOW)
    assert "error" not in outcome, outcome
    response = outcome["response"]
    assert response.usage.output_tokens > 0  # type: ignore[attr-defined]
    assert response.stop_reason == "max_tokens"  # type: ignore[attr-defined]
    assert response.usage.output_tokens == 64  # type: ignore[attr-defined]
    assert procs.wait_gone(status.pid, SLOW, mgr._proc)
    assert not mgr.paths.socket.exists() and not mgr.paths.lock.exists()
    stopping = [e for e in read_events(mgr.paths.log) if e["event"] == "stopping"][-1]
    assert stopping["reason"] == "SIGTERM"
    assert stopping["in_flight"] == 1


def test_stop_escalates_to_sigkill_when_the_daemon_hangs(reap_daemons: None) -> None:  # noqa: F811
    mgr = make_manager()
    status = mgr.ensure_running()
    assert status.pid is not None
    os.kill(status.pid, signal.SIGSTOP)  # frozen: no RPC answers, SIGTERM stays pending
    try:
        result = mgr.stop(grace_s=0.5)
    finally:
        procs.signal_pid(status.pid, signal.SIGCONT)
    assert result.how == "sigkill" and result.stopped
    assert not procs.alive(status.pid, mgr._proc)
    # The killed daemon could not tidy up; stop did.
    assert not mgr.paths.socket.exists() and not mgr.paths.lock.exists()


def test_long_home_falls_back_to_a_short_socket_dir(
    reap_daemons: None,  # noqa: F811
    evalctl_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    deep = evalctl_home / ("d" * 60) / ("e" * 60)
    monkeypatch.setenv("EVALCTL_HOME", str(deep))
    settings = load_settings(env=os.environ)
    model = embedded_model()
    assert model.expected_sha256 is not None
    paths = daemon_paths(settings, model.expected_sha256)
    assert len(str(settings.run_dir / "x.sock")) > SOCKET_PATH_MAX
    assert paths.socket.parent == short_run_dir_path(deep)
    assert len(os.fsencode(paths.socket)) <= SOCKET_PATH_MAX
    assert _mode(paths.socket.parent) == 0o700
    mgr = DaemonManager(settings, spec(), start_timeout_s=SLOW)
    try:
        assert mgr.ensure_running().ready
        assert _mode(paths.socket) == 0o600
    finally:
        assert mgr.stop(grace_s=2).stopped
        mgr.close()
        shutil.rmtree(paths.socket.parent, ignore_errors=True)


def test_a_daemon_that_dies_while_starting_is_reported_with_its_log(
    reap_daemons: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    bogus = tmp_path / "broken.gguf"
    bogus.write_bytes(b"GGUF" + b"\0" * 64)
    mgr = make_manager(model_path=bogus, model_sha256="f" * 64, model_name="broken")
    started = time.monotonic()
    with pytest.raises(DaemonStartError) as info:
        mgr.ensure_running()
    assert time.monotonic() - started < SLOW
    message = str(info.value)
    assert "exited with status 3" in message
    assert "cannot load model" in message  # quoted from the daemon's own log
    assert not mgr.paths.socket.exists() and not mgr.paths.lock.exists()


def test_server_start_status_stop_commands(
    reap_daemons: None,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.cli_helpers import run_cli

    started = run_cli(capsys, "server", "start", "--threads", "1", "--json")
    assert started.code == 0, started.err
    status = json.loads(started.out)
    assert status["ready"] and status["pid"]
    shown = json.loads(run_cli(capsys, "server", "status", "--json").out)
    assert shown["pid"] == status["pid"] and shown["running"]
    stopped = run_cli(capsys, "server", "stop", "--json")
    assert stopped.code == 0, stopped.err
    assert json.loads(stopped.out)["how"] == "shutdown"
    assert not procs.alive(status["pid"])
    gone = json.loads(run_cli(capsys, "server", "status", "--json").out)
    assert gone["running"] is False
    again = run_cli(capsys, "server", "stop", "--json")
    assert json.loads(again.out)["how"] == "not_running"
