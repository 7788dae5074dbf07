"""EVALCTL_HOME: created 0700 when evalctl creates it; an existing directory that is not a
private directory of this user is never chmod'ed, a private `evalctl-<uid>/` inside it is
used instead; a home that cannot be used exits 3 saying what to fix."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalctl.config import Settings, private_home_for
from evalctl.errors import ExitCode, InfraError
from tests.cli_helpers import run_cli


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _status_uses(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Run a real command that needs the home; return the socket directory it reports."""
    monkeypatch.setenv("EVALCTL_HOME", str(home))
    result = run_cli(capsys, "server", "status", "--json")
    assert result.code == 0, result.err
    return Path(json.loads(result.out)["socket"]).parent.parent


def test_a_missing_home_is_created_0700(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "new" / "home"
    assert _status_uses(home, capsys, monkeypatch) == home
    assert _mode(home) == 0o700


def test_a_private_home_of_this_user_is_used_as_it_is(tmp_path: Path) -> None:
    home = tmp_path / "mine"
    home.mkdir(mode=0o700)
    assert private_home_for(home) == home


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A directory with a short path: under pytest's tmp_path (deeper in a pytest-xdist
    worker) the daemon's socket would pass the OS's limit and move to its fallback."""
    path = Path(tempfile.mkdtemp(prefix="evs-", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("mode", [0o1777, 0o755, 0o750, 0o711])
def test_a_shared_home_keeps_its_mode_and_gets_a_private_subdirectory(
    short_tmp: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, mode: int
) -> None:
    shared = short_tmp / "shared"
    shared.mkdir()
    shared.chmod(mode)  # like /tmp, or a home directory others may list
    used = _status_uses(shared, capsys, monkeypatch)
    assert used == shared / f"evalctl-{os.getuid()}"
    assert _mode(used) == 0o700
    assert _mode(shared) == mode  # never tightened (as root that would break /tmp)
    # A second process settles on the same directory.
    assert private_home_for(shared) == used


def test_a_foreign_private_subdirectory_is_refused_not_chmodded(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    squatted = shared / f"evalctl-{os.getuid()}"
    squatted.mkdir()
    squatted.chmod(0o777)
    with pytest.raises(InfraError) as info:
        private_home_for(shared)
    assert str(squatted) in info.value.message
    assert _mode(squatted) == 0o777


def test_settings_resolve_the_home_once(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    settings = Settings(home=shared)
    assert settings.run_dir == shared / f"evalctl-{os.getuid()}" / "run"
    assert settings.logs_dir.parent == settings.private_home()


@pytest.mark.parametrize("shape", ["a file", "under a file"])
def test_an_unusable_home_exits_3_with_what_to_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, shape: str
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    home = blocker if shape == "a file" else blocker / "home"
    monkeypatch.setenv("EVALCTL_HOME", str(home))
    result = run_cli(capsys, "server", "status")
    assert result.code == ExitCode.INFRA
    assert "Traceback" not in result.err
    assert str(home) in result.err
    assert "EVALCTL_HOME" in result.err


def test_the_judge_cache_lives_in_the_private_home(tmp_path: Path) -> None:
    from evalctl.judge.cache import JudgeCache

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    cache = JudgeCache(shared)
    assert cache.directory.parent == shared / f"evalctl-{os.getuid()}"
    assert _mode(shared) == 0o1777
