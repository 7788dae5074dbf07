"""Shared pieces for tests of the local daemon: real model, real daemon, one thread.

Every fixture that may start a daemon stops it in its finalizer, and `reap_daemons`
SIGKILLs whatever still holds a lock under the test's EVALCTL_HOME, so no daemon outlives
its test even when an assertion fails halfway.
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evalctl import flock
from evalctl.chat import CompletionRequest, Message
from evalctl.config import load_settings
from evalctl.lifecycle import procs
from evalctl.lifecycle.manager import DaemonManager, DaemonSpec
from evalctl.modelfiles.manifest import ResolvedModel, resolve
from evalctl.providers.local import LocalProvider
from evalctl.stability.crash import UNENDING_MIN_CHARS, UNENDING_SCHEMA

# llama.cpp threads busy-wait; on 2 shared cores one thread is the fastest and the fairest.
THREADS = 1
# Generous: the machine is shared and generation has collapsed to <1 tok/s under load.
SLOW = 180.0


# The embedded model's longest token, in bytes (test_server_engine checks it): a reply of
# at most UNENDING_MIN_CHARS // LONGEST_TOKEN_BYTES tokens cannot close UNENDING_SCHEMA.
LONGEST_TOKEN_BYTES = 32
UNENDING_MAX_TOKENS = UNENDING_MIN_CHARS // LONGEST_TOKEN_BYTES - 1


def unending_request(max_tokens: int = UNENDING_MAX_TOKENS, tag: str = "") -> CompletionRequest:
    """A request whose reply cannot end before `max_tokens`: "still generating" is then a
    fact about the grammar, not a bet on how fast this machine is."""
    assert max_tokens <= UNENDING_MAX_TOKENS
    return CompletionRequest(
        messages=[Message.user("Write a long story about a lighthouse keeper.")],
        json_schema=UNENDING_SCHEMA,
        max_tokens=max_tokens,
        tag=tag,
        # A looping story still counts as generating: the engine must not cut it short.
        allow_repetition=True,
    )


def embedded_model() -> ResolvedModel:
    return resolve(None)


def spec(**overrides: Any) -> DaemonSpec:
    model = embedded_model()
    assert model.expected_sha256 is not None
    fields: dict[str, Any] = {
        "model_path": model.path,
        "model_name": model.name,
        "model_sha256": model.expected_sha256,
        "n_threads": THREADS,
        "idle_timeout_s": 600.0,
    }
    fields.update(overrides)
    return DaemonSpec(**fields)


def make_manager(**overrides: Any) -> DaemonManager:
    return DaemonManager(load_settings(env=os.environ), spec(**overrides), start_timeout_s=SLOW)


def make_provider(**kwargs: Any) -> LocalProvider:
    model = embedded_model()
    assert model.expected_sha256 is not None
    kwargs.setdefault("n_threads", THREADS)
    kwargs.setdefault("idle_timeout_s", 600.0)
    kwargs.setdefault("start_timeout_s", SLOW)
    return LocalProvider(load_settings(env=os.environ), model, model.expected_sha256, **kwargs)


def held_lock_pids(home: Path) -> list[int]:
    pids = []
    for lock in home.rglob("*.lock"):
        if flock.is_locked(lock):
            pid = flock.read_pid(lock)
            if pid is not None:
                pids.append(pid)
    return pids


def kill_all(home: Path) -> None:
    """SIGKILL every daemon holding a lock of this home (and its short socket dir)."""
    from evalctl.lifecycle.paths import short_run_dir_path

    short = short_run_dir_path(home)
    for directory in (home, short):
        if directory.is_dir():
            for pid in held_lock_pids(directory):
                procs.signal_pid(pid, signal.SIGKILL)
                procs.wait_gone(pid, 10)
    shutil.rmtree(short, ignore_errors=True)


@pytest.fixture
def reap_daemons(evalctl_home: Path) -> Iterator[None]:
    yield
    kill_all(evalctl_home)


@pytest.fixture
def manager(reap_daemons: None) -> Iterator[DaemonManager]:
    m = make_manager()
    yield m
    m.stop(grace_s=2)
    m.close()


@pytest.fixture
def provider(reap_daemons: None) -> Iterator[LocalProvider]:
    p = make_provider()
    yield p
    p.stop_daemon(grace_s=2)
    p.close()


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.02)
