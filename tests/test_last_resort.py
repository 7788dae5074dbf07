"""`main()`'s last resort: a bug prints one line and the path of a saved traceback and exits 4;
an OSError the machine caused (a full disk) exits 3 with what to fix. The raising commands are
registered on the app by these tests only: no user can reach them."""

from __future__ import annotations

import errno
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import typer

from evalctl.cli import commands
from evalctl.errors import ExitCode
from tests.cli_helpers import run_cli


def _with_command(monkeypatch: pytest.MonkeyPatch, name: str, body: Callable[[], None]) -> None:
    register = commands.register

    def register_with_test_command(app: typer.Typer, argv: Sequence[str]) -> None:
        register(app, argv)

        def command(as_json: bool = typer.Option(False, "--json")) -> None:
            body()

        app.command(name)(command)

    monkeypatch.setattr(commands, "register", register_with_test_command)


def _boom() -> None:
    raise ZeroDivisionError("deliberate bug in a test command")


def test_a_bug_exits_4_with_one_line_and_a_saved_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], evalctl_home: Path
) -> None:
    _with_command(monkeypatch, "boom", _boom)
    result = run_cli(capsys, "boom")
    assert result.code == ExitCode.INTERNAL == 4
    first, second = result.err.splitlines()[:2]
    assert first == "internal error: ZeroDivisionError: deliberate bug in a test command"
    assert "Traceback" not in result.err
    saved = Path(second.split("traceback saved to ", 1)[1].split(";", 1)[0])
    assert saved.parent == evalctl_home / "logs"
    text = saved.read_text()
    assert text.startswith("Traceback") and "_boom" in text
    assert "ZeroDivisionError: deliberate bug in a test command" in text


def test_a_bug_with_json_prints_the_error_object(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _with_command(monkeypatch, "boom", _boom)
    result = run_cli(capsys, "boom", "--json")
    assert result.code == 4
    error = json.loads(result.out)["error"]
    assert error["exit_code"] == 4
    assert error["message"].startswith("internal error: ZeroDivisionError")
    assert Path(error["file"]).is_file()


def test_the_traceback_goes_to_a_temp_dir_when_the_home_is_unusable(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    blocker = tmp_path / "home-is-a-file"
    blocker.write_text("")
    monkeypatch.setenv("EVALCTL_HOME", str(blocker))
    _with_command(monkeypatch, "boom", _boom)
    result = run_cli(capsys, "boom")
    assert result.code == 4
    saved = Path(result.err.splitlines()[1].split("traceback saved to ", 1)[1].split(";")[0])
    assert saved.is_file() and not saved.is_relative_to(blocker)
    saved.unlink()


def test_an_os_error_from_the_machine_exits_3_with_what_to_fix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def full_disk() -> None:
        raise OSError(errno.ENOSPC, "No space left on device", "/somewhere/results.json")

    _with_command(monkeypatch, "fill", full_disk)
    result = run_cli(capsys, "fill")
    assert result.code == ExitCode.INFRA
    assert "Traceback" not in result.err
    assert "/somewhere/results.json" in result.err
    assert "free some disk space" in result.err
