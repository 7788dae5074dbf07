"""A probe suite in a directory, run through the real CLI, and a look for any process of it
left behind (tests/test_bounded_calls.py, tests/test_plugin_check_bounds.py)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import psutil

from tests.cli_helpers import evalctl


def leftovers(marker: str) -> list[str]:
    """Processes still running whose command line names `marker` (this test's directory)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if marker in cmdline and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(cmdline)
    return found


def tool_table(name: str, backend: str) -> str:
    return textwrap.dedent(
        f"""
        [[suite.tool]]
        name = "{name}"
        description = "{name}"
        parameters = {{ type = "object", properties = {{}} }}
        {backend}
        timeout_s = 600
        """
    )


def write_probe(root: Path, suite: str, script: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "probe.toml").write_text(textwrap.dedent(suite))
    (root / "script.toml").write_text(textwrap.dedent(script))


def run_probe(root: Path, *extra: str) -> tuple[dict[str, Any], str]:
    ran = evalctl(
        root,
        "run",
        "--provider",
        "scripted",
        "--script",
        "script.toml",
        "--cases",
        "probe.toml",
        "--out",
        "out",
        "--no-progress",
        *extra,
    )
    # 3: every case ended in error, as the deadline probe means them to.
    assert ran.returncode in (0, 1, 3), ran.stderr
    assert "Traceback" not in ran.stderr
    assert not leftovers(str(root)), leftovers(str(root))
    results: dict[str, Any] = json.loads((root / "out" / "results.json").read_text())
    return results, ran.stdout
