"""Run the real `evalctl` entry point in-process and capture exit code and output."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest

from evalctl.cli import app as cli_app


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
