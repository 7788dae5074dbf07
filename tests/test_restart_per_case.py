"""`evalctl run --restart-per-case`: the full-benchmark procedure, a fresh daemon per case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalctl.lifecycle import procs
from evalctl.results.io import read_run
from tests.cli_helpers import run_cli
from tests.local_helpers import held_lock_pids
from tests.stability_helpers import (
    one_thread,  # noqa: F401  (fixture)
    short_suite,  # noqa: F401  (fixture)
)


@pytest.mark.model
def test_three_cases_run_on_three_daemons(
    short_suite: Path,  # noqa: F811
    one_thread: None,  # noqa: F811
    evalctl_home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "run"
    done = run_cli(
        capsys,
        "run",
        "--provider",
        "local",
        "--cases",
        str(short_suite),
        "--restart-per-case",
        "--cooldown",
        "0.2",
        "--timeout",
        "180",
        "--out",
        str(out),
        "--json",
    )
    # The answers are never "unused": every case fails, and `run` exits 0 on scored cases.
    assert done.code == 0, done.err + done.out
    result = read_run(out)
    assert result.settings.restart_per_case and result.settings.cooldown_s == 0.2
    assert [c.key for c in result.cases] == ["short/colour", "short/animal", "short/city"]
    daemons = [c.daemon for c in result.cases]
    pids = [d.pid for d in daemons if d is not None]
    assert len(pids) == 3 and len(set(pids)) == 3, pids
    for case, daemon in zip(result.cases, daemons, strict=True):
        assert case.status == "fail", case.error
        assert daemon is not None
        assert daemon.start_ms > 0 and daemon.duration_ms > 0
        assert daemon.transport_errors == [] and daemon.final_pid is None
    assert [line["daemon_pid"] for line in json.loads(done.out)["cases"]] == pids
    # Each daemon was stopped before the next started; the last one when the run ended.
    assert not any(procs.alive(pid) for pid in pids)
    assert held_lock_pids(evalctl_home) == []


def test_restart_per_case_needs_a_daemon(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "script.json"
    script.write_text("{}")
    done = run_cli(
        capsys,
        "run",
        "--provider",
        "scripted",
        "--script",
        str(script),
        "--cases",
        str(echo_suite),
        "--restart-per-case",
        "--out",
        str(tmp_path / "out"),
    )
    assert done.code == 2
    assert "--restart-per-case" in done.err and "local provider only" in done.err


def test_cooldown_needs_restart_per_case(
    echo_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = run_cli(capsys, "run", "--cases", str(echo_suite), "--cooldown", "5")
    assert done.code == 2 and "--cooldown" in done.err
