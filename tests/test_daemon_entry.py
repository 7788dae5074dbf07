"""The daemon's entry point: what it imports first, and how a crash or failure at start is
reported.

A CUDA build of llama-cpp-python segfaults when grpc was imported before llama_cpp and a
model is then loaded (issue 23), so the order is pinned here, on the real entry, by the
import log of a real `python -m evalctl.server` process.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalctl.chat import CompletionRequest, Message
from evalctl.config import load_settings
from evalctl.lifecycle.manager import DaemonStartError, signal_name
from evalctl.modelfiles.manifest import ResolvedModel, sha256_file
from evalctl.providers.local import LocalProvider
from evalctl.server.jsonlog import read_events
from tests.local_helpers import make_manager, reap_daemons  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[1]


def _top_level_import_order(argv: list[str]) -> list[str]:
    """Top-level packages in the order they were imported, from `-X importtime` (which
    logs a module when its import ends, nested imports first)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    # A package's import began before its first submodule's line: when llama_cpp is
    # imported first, every line of its subtree precedes every line of grpc's.
    order: list[str] = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        top = line.rsplit("|", 1)[1].strip().split(".")[0]
        if top not in order:
            order.append(top)
    return order


def test_the_daemon_entry_imports_llama_cpp_before_grpc() -> None:
    order = _top_level_import_order(["-m", "evalctl.server", "--help"])
    assert "llama_cpp" in order and "grpc" in order, order
    assert order.index("llama_cpp") < order.index("grpc"), order


def test_the_check_would_catch_grpc_first() -> None:
    # The same measurement on a process that imports grpc first must say so, or the test
    # above could pass whatever the entry did.
    order = _top_level_import_order(["-c", "import grpc, llama_cpp"])
    assert order.index("grpc") < order.index("llama_cpp"), order


def test_signal_names() -> None:
    assert signal_name(11) == "SIGSEGV"
    assert signal_name(4) == "SIGILL"
    assert signal_name(250) == "signal 250"


def test_a_native_crash_at_start_is_named_with_its_logs(
    reap_daemons: None,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A real daemon process that dies of SIGSEGV before it serves: Python imports
    # `sitecustomize` from PYTHONPATH at start-up, before the daemon's own code runs.
    crash = tmp_path / "crash"
    crash.mkdir()
    (crash / "sitecustomize.py").write_text(
        "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(crash))
    model = tmp_path / "any.gguf"
    model.write_bytes(b"GGUF" + b"\0" * 64)
    mgr = make_manager(model_path=model, model_sha256="e" * 64, model_name="any")
    with pytest.raises(DaemonStartError) as info:
        mgr.ensure_running()
    message = str(info.value)
    assert "SIGSEGV" in message and "native crash" in message
    assert str(mgr.paths.stderr) in message and str(mgr.paths.log) in message
    assert "status -11" not in message


def test_a_start_failure_met_while_sizing_a_time_limit_is_reported_without_a_second_start(
    reap_daemons: None,  # noqa: F811
    tmp_path: Path,
) -> None:
    # The runner asks for the measured speed before a case's clock starts, which starts the
    # daemon; when that start fails, the case's first request reports the failure at once.
    bogus = tmp_path / "broken.gguf"
    bogus.write_bytes(b"GGUF" + b"\0" * 64)
    sha = sha256_file(bogus)
    provider = LocalProvider(
        load_settings(env=os.environ),
        ResolvedModel(name="broken", path=bogus, expected_sha256=None, entry=None),
        sha,
        n_threads=1,
    )
    try:
        assert provider.measured_speed() is None
        with pytest.raises(DaemonStartError) as info:
            provider.complete(CompletionRequest(messages=[Message.user("hi")]), timeout=30)
        assert "cannot load model" in str(info.value)
        starts = [e for e in read_events(provider.manager.paths.log) if e["event"] == "starting"]
        assert len(starts) == 1
        # Once reported, the next request tries a fresh start again.
        with pytest.raises(DaemonStartError):
            provider.complete(CompletionRequest(messages=[Message.user("hi")]), timeout=30)
        starts = [e for e in read_events(provider.manager.paths.log) if e["event"] == "starting"]
        assert len(starts) == 2
    finally:
        provider.close()
