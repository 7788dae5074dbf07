"""examples/mcp: the wine catalog served as an MCP server (stdio, on the `mcp` SDK), its
golden-query suite run on the embedded local model: the committed baseline gates clean, and
the regression planted in the server (`--regression`: the search tool renamed, its
description vague) makes `compare` exit 1 naming the cases. Run on a copy, with the venv's
python3 (which has `mcp`) first on PATH, as the suite's header says."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.local_helpers import reap_daemons  # noqa: F401  (fixture)

EXAMPLE = REPO / "examples" / "mcp"
SERVER = 'command = ["python3", "wine_server.py"]'


def _evalctl(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    return subprocess.run(
        [sys.executable, "-m", "evalctl.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.model
def test_the_baseline_gates_and_the_planted_regression_exits_1(
    tmp_path: Path,
    reap_daemons: None,  # noqa: F811
) -> None:
    copy = tmp_path / "mcp"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    suite = copy / "mcp-wines.toml"
    assert SERVER in suite.read_text(encoding="utf-8")
    baseline = str(EXAMPLE / "baseline.json")
    try:
        run = _evalctl(
            tmp_path, "run", "--provider", "local", "--cases", str(copy), "--out",
            str(tmp_path / "clean"), "--no-store",
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        clean = _evalctl(tmp_path, "compare", baseline, str(tmp_path / "clean"))
        assert clean.returncode == 0, clean.stdout + clean.stderr

        suite.write_text(
            suite.read_text(encoding="utf-8").replace(
                SERVER, 'command = ["python3", "wine_server.py", "--regression"]'
            ),
            encoding="utf-8",
        )
        run = _evalctl(
            tmp_path, "run", "--provider", "local", "--cases", str(copy), "--out",
            str(tmp_path / "planted"), "--no-store",
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        gate = _evalctl(tmp_path, "compare", baseline, str(tmp_path / "planted"))
        assert gate.returncode == 1, gate.stdout + gate.stderr
        said = gate.stdout + gate.stderr
        assert "mcp-wines/buy-red" in said and "tool-called:search_wines" in said
    finally:
        _evalctl(tmp_path, "server", "stop")
