"""A run directory belongs to one run: a second `run` or a `--resume` into a directory a live
run holds is refused with exit 2, naming the holder's pid; once the holder is gone (even
SIGKILLed) the directory can be resumed. Real processes; no timing assumptions: the holder
hangs on a scripted reply until it is killed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalctl.runner.rundir import RUN_LOCK
from tests.cli_helpers import run_cli
from tests.conftest import REPO
from tests.test_resume import CASES, JOURNAL, journal_lines, write_suite

GUARD_S = 120  # against a hung child, not a timing check


def _evalctl(tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.Popen(
        [sys.executable, "-m", "tests.echo_cli", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait_for(predicate: object, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + GUARD_S
    while not predicate():  # type: ignore[operator]
        assert proc.poll() is None, f"the first run exited before {what}"
        assert time.monotonic() < deadline, f"no {what} after {GUARD_S}s"
        time.sleep(0.02)


def test_a_busy_run_directory_refuses_a_second_run_and_a_resume(
    echo_suite: Path,  # registers the test-only echo kind in this process too
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    suite, script = write_suite(tmp_path, delay_s=0.0, hang_from=1)
    out = tmp_path / "out"
    run_args = ["run", "--provider", "scripted", "--script", str(script), "--cases", str(suite)]
    first = _evalctl(tmp_path, *run_args, "--out", str(out), "--no-progress")
    try:
        lock = out / RUN_LOCK
        # The lock names its holder, and one case is journaled (so the manifest is written).
        _wait_for(lambda: lock.is_file() and lock.read_text().strip(), first, "pid in the lock")
        _wait_for(lambda: journal_lines(out / JOURNAL) >= 1, first, "journaled case")
        assert int(lock.read_text()) == first.pid

        second = _evalctl(tmp_path, *run_args, "--out", str(out), "--no-progress", "--json")
        stdout, stderr = second.communicate(timeout=GUARD_S)
        assert second.returncode == 2, stderr
        assert f"pid {first.pid}" in stderr.decode()
        assert "Traceback" not in stderr.decode()
        error = json.loads(stdout)["error"]
        assert error["exit_code"] == 2 and error["file"] == str(out)

        resumed = run_cli(capsys, "run", "--resume", str(out), "--no-progress")
        assert resumed.code == 2
        assert f"pid {first.pid}" in resumed.err
        # The refused runs touched nothing: the holder's journal is intact.
        assert journal_lines(out / JOURNAL) == 1
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate()

    # The kernel dropped the lock with the process: the directory resumes (without the hang).
    write_suite(tmp_path, delay_s=0.0)
    done = run_cli(capsys, "run", "--resume", str(out), "--no-progress")
    assert done.code in (0, 1), done.err
    assert journal_lines(out / JOURNAL) == CASES
    assert not (out / RUN_LOCK).exists()  # released and removed at the end of the run
