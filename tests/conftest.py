"""Shared fixtures. Every test gets its own EVALCTL_HOME so no test touches ~/.evalctl."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
THREAD_VARS = ("EVALCTL_LOCAL_THREADS", "EVALCTL_LOCAL_THREADS_BATCH")


def pytest_configure(config: pytest.Config) -> None:
    """SIGINT as Python has it by default, wherever pytest was started from: a shell's
    background job (`make test &`, a CI runner's) starts with SIGINT ignored, an ignored signal
    stays ignored across exec, and the CLI processes that tests interrupt with SIGINT would
    then never see it.

    In a pytest-xdist worker (`make test` runs one per core), llama.cpp gets the cores
    divided among the workers: ggml's threads wait for each other at every step, so two
    workers that each took every core decode at a fraction of one that took its share.
    A count the environment already sets is kept."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1:
        share = max(1, (os.cpu_count() or 1) // workers)
        for var in THREAD_VARS:
            os.environ.setdefault(var, str(share))


@pytest.fixture(autouse=True)
def evalctl_home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    # A short path under /tmp: pytest's tmp_path can push a Unix socket past 107 characters.
    home = Path(tempfile.mkdtemp(prefix="evh-", dir="/tmp"))
    monkeypatch.setenv("EVALCTL_HOME", str(home))
    for var in (
        "EVALCTL_LOCAL_MODEL",
        "ANTHROPIC_API_KEY",
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
    ):
        monkeypatch.delenv(var, raising=False)
    yield home
    # No daemon may outlive its test, even one a failed assertion left behind.
    from tests.local_helpers import kill_all

    kill_all(home)
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture
def repo() -> Path:
    return REPO


@pytest.fixture(autouse=True)
def fresh_plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with only the built-in plugins; what a test registers or loads
    (evalctl.toml plugins add their directory to sys.path) is gone after it."""
    from evalctl import plugin_loader

    monkeypatch.setattr(sys, "path", list(sys.path))
    plugin_loader.reset()
    yield
    plugin_loader.reset()


@pytest.fixture(autouse=True)
def fresh_file_rules() -> Iterator[None]:
    """Each test starts under the path rule and the default size limit (evalctl.userpaths,
    evalctl.userfiles): an evalctl.toml or flag of an earlier test opens nothing."""
    from evalctl import userfiles, userpaths

    userpaths.reset()
    userfiles.set_max_file_bytes(None)
    yield
    userpaths.reset()
    userfiles.set_max_file_bytes(None)


@pytest.fixture
def echo_suite(tmp_path: Path) -> Path:
    """A two-case suite of the test-only `echo` kind, with its `upper` tool registered."""
    from tests import echo_kind

    echo_kind.install()
    cases_dir = tmp_path / "cases"
    cases_dir.mkdir()
    path = cases_dir / "echo.toml"
    path.write_text(echo_kind.SUITE_TOML)
    return path
