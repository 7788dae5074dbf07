"""Where suites and settings are found: a directory with no suite files is an error, not
"ok 0 cases"; evalctl.toml is found from any directory inside the project."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalctl.config import load_settings
from tests.cli_helpers import run_cli
from tests.conftest import REPO

PLUGIN = REPO / "tests" / "plugin_pkg" / "evalctl_ping.py"
PING_SUITE = """
[suite]
name = "ping"
kind = "ping"
tools = ["reverse"]

[[case]]
id = "plain"
input = { prompt = "say pong" }
expected = { answer = "pong" }
"""


@pytest.mark.parametrize("command", ["validate", "list"])
def test_a_directory_without_suite_files_is_exit_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    empty = tmp_path / "casse"  # a typo'd path that happens to exist
    empty.mkdir()
    (empty / "notes.md").write_text("not a suite")
    result = run_cli(capsys, "cases", command, str(empty))
    assert result.code == 2, result.out
    assert str(empty) in result.err
    assert "no suite files" in result.err
    assert "ok" not in result.out


def test_a_run_on_a_directory_without_suite_files_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(
        capsys,
        "run",
        "--provider",
        "scripted",
        "--cases",
        str(tmp_path),
        "--out",
        str(tmp_path / "o"),
    )
    assert result.code == 2
    assert "no suite files" in result.err


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "cases").mkdir(parents=True)
    (root / ".git").mkdir()  # the repository's root: the search stops here
    (root / "cases" / "ping.toml").write_text(PING_SUITE)
    (root / "evalctl.toml").write_text('plugins = ["evalctl_ping"]\ncases_dir = "cases"\n')
    shutil.copy(PLUGIN, root / "evalctl_ping.py")
    return root


def test_evalctl_toml_and_its_plugins_are_found_from_a_subdirectory(
    tmp_path: Path, evalctl_home: Path
) -> None:
    # The bug: from cases/, evalctl.toml (and so the plugin's kind) was not found.
    root = _project(tmp_path)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["EVALCTL_HOME"] = str(evalctl_home)
    proc = subprocess.run(
        [sys.executable, "-m", "evalctl.cli", "cases", "validate", "ping.toml"],
        cwd=root / "cases",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "1 case in 1 suite" in proc.stdout


def test_relative_settings_paths_start_at_the_project_directory(tmp_path: Path) -> None:
    root = _project(tmp_path)
    settings = load_settings(cwd=root / "cases", env={})
    assert settings.config_file == (root / "evalctl.toml").absolute()
    assert settings.cases_dir == root / "cases"
    # From the project directory itself, paths stay as written.
    assert load_settings(cwd=root, env={}).cases_dir == Path("cases")


def test_the_search_stops_at_the_repository_root(tmp_path: Path) -> None:
    (tmp_path / "evalctl.toml").write_text('default_suites = ["stray"]\n')
    repo = tmp_path / "checkout"
    (repo / ".git").mkdir(parents=True)
    (repo / "sub").mkdir()
    assert load_settings(cwd=repo / "sub", env={}).config_file is None
