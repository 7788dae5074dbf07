"""Run the real `evalctl` entry point, in-process (`run_cli`: exit code and output captured)
or in a subprocess (`evalctl`)."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalctl.cli import app as cli_app
from tests.conftest import REPO


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> CliResult:
    capsys.readouterr()  # drop anything printed before
    old_argv = sys.argv
    sys.argv = ["evalctl", *args]
    # A fresh Typer app each time: registering twice on one app would duplicate commands.
    cli_app.app.registered_commands.clear()
    cli_app.app.registered_groups.clear()
    try:
        cli_app.main()
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = old_argv
    captured = capsys.readouterr()
    return CliResult(code, captured.out, captured.err)


def evalctl(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a subprocess: exit codes and tracebacks show only at that boundary."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "evalctl.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
