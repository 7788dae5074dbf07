"""Journal and resume: a SIGKILLed run, resumed, ends with the file a clean run writes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evalctl.runner.resume import JOURNAL, MANIFEST, repair_journal
from tests.cli_helpers import run_cli
from tests.conftest import REPO

CASES = 8
# Fields that differ between any two runs of the same cases: identity and timing.
# seed_base: each new run draws its own first sample seed (a greedy run sends none of it).
VOLATILE = frozenset(
    {"run_id", "started_at", "finished_at", "latency_ms", "duration_ms", "seed_base"}
)


# Longer than any test waits: a case with this delay is still "running" when it is killed.
HANG_S = 600.0


def write_suite(
    directory: Path, *, delay_s: float = 0.0, hang_from: int | None = None
) -> tuple[Path, Path]:
    """An echo suite of CASES cases and a script answering each after `delay_s`; cases from
    `hang_from` on answer only after HANG_S."""
    suite = ['[suite]\nname = "echo"\nkind = "echo"\nsystem_prompt = "Echo."\n']
    suite.append('version = "1"\ntools = ["upper"]\nmax_turns = 2\n')
    script = []
    for i in range(CASES):
        suite.append(
            f'[[case]]\nid = "c{i}"\ninput = {{ prompt = "say w{i}" }}\n'
            f'expected = {{ answer = "w{i}" }}\n'
        )
        # One case fails, so the file holds both statuses.
        answer = "wrong" if i == 3 else f"w{i}"
        delay = HANG_S if hang_from is not None and i >= hang_from else delay_s
        script.append(f'[[cases."echo/c{i}"]]\ncontent = "{answer}"\ndelay_s = {delay}\n')
    suite_path = directory / "echo.toml"
    suite_path.write_text("\n".join(suite))
    script_path = directory / f"script-{delay_s}.toml"
    script_path.write_text("\n".join(script))
    return suite_path, script_path


def journal_lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def normalized(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def results(run_dir: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((run_dir / "results.json").read_text())
    return data


def start_killable_run(
    tmp_path: Path, suite: Path, script: Path, out: Path
) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    argv = [sys.executable, "-m", "tests.echo_cli", "run", "--provider", "scripted"]
    argv += ["--script", str(script), "--cases", str(suite), "--out", str(out), "--no-progress"]
    return subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def test_resume_after_sigkill_equals_an_uninterrupted_run(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two cases answer at once, the third hangs: the kill lands mid-run on any machine.
    suite, script = write_suite(tmp_path, delay_s=0.0, hang_from=2)
    killed = tmp_path / "killed"
    proc = start_killable_run(tmp_path, suite, script, killed)
    journal = killed / JOURNAL
    deadline = time.monotonic() + 120  # a guard against a hung child, not a timing check
    while journal_lines(journal) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    # A kill leaves no chance to write results; the journal holds what finished.
    assert not (killed / "results.json").exists()
    done_before = journal_lines(journal)
    assert done_before == 2
    original_id = json.loads((killed / MANIFEST).read_text())["header"]["run_id"]

    # The same script file, now without the hang (the script is not part of results); the
    # resume reads it from the manifest, and the reference run uses it too.
    _, quick_script = write_suite(tmp_path, delay_s=0.0)
    assert quick_script == script
    resumed = run_cli(capsys, "run", "--resume", str(killed), "--no-progress", "--json")
    assert resumed.code == 0, resumed.err
    assert json.loads(resumed.out)["resumed"] is True

    clean = tmp_path / "clean"
    args = ["--script", str(quick_script), "--cases", str(suite), "--out", str(clean)]
    reference = run_cli(capsys, "run", "--provider", "scripted", *args, "--no-progress")
    assert reference.code == 0, reference.err

    final = results(killed)
    assert final["run_id"] == original_id
    assert final["interrupted"] is False
    assert normalized(final) == normalized(results(clean))
    assert [c["status"] for c in final["cases"]].count("fail") == 1
    # Each case was journaled exactly once: the resume ran only the missing ones.
    keys = [json.loads(line)["key"] for line in journal.read_text().splitlines()]
    assert sorted(keys) == sorted(f"echo/c{i}" for i in range(CASES))


def _interrupted_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path, Path]:
    """A completed run directory, then its results removed and its journal cut to 2 cases:
    exactly what a kill after the second case leaves behind."""
    suite, script = write_suite(tmp_path, delay_s=0.0)
    out = tmp_path / "run"
    done = run_cli(
        capsys, "run", "--provider", "scripted", "--script", str(script), "--cases", str(suite),
        "--out", str(out), "--no-progress",
    )  # fmt: skip
    assert done.code == 0, done.err
    lines = (out / JOURNAL).read_text().splitlines(keepends=True)
    # The third line cut mid-way, as a kill during the write would leave it.
    (out / JOURNAL).write_text("".join(lines[:2]) + lines[2][:40])
    (out / "results.json").unlink()
    return out, suite, script


def test_half_written_journal_line_is_dropped_and_its_case_rerun(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, _, _ = _interrupted_run(tmp_path, capsys)
    resumed = run_cli(capsys, "run", "--resume", str(out), "--no-progress")
    assert resumed.code == 0, resumed.err
    assert len(results(out)["cases"]) == CASES
    lines = (out / JOURNAL).read_text().splitlines()
    assert len(lines) == CASES
    assert all(json.loads(line)["key"] for line in lines)


@pytest.mark.parametrize(
    ("flags", "field"),
    [
        (["--provider", "local"], "--provider"),
        (["--model", "other"], "--model"),
        (["--suite", "other"], "--suite"),
        (["--case", "c1"], "--case"),
        (["--repeats", "3"], "--repeats"),
        (["--shard", "1/2"], "--shard"),
        (["--out", "elsewhere"], "--out"),
    ],
)
def test_resume_refuses_another_selection(
    echo_suite: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    flags: list[str],
    field: str,
) -> None:
    out, _, _ = _interrupted_run(tmp_path, capsys)
    refused = run_cli(capsys, "run", "--resume", str(out), *flags, "--no-progress")
    assert refused.code == 2
    assert field in refused.err
    assert not (out / "results.json").exists()


def test_resume_accepts_flags_that_repeat_the_original(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, suite, script = _interrupted_run(tmp_path, capsys)
    again = run_cli(
        capsys, "run", "--resume", str(out), "--provider", "scripted", "--script", str(script),
        "--cases", str(suite), "--no-progress",
    )  # fmt: skip
    assert again.code == 0, again.err


def test_resume_refuses_changed_suites(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, suite, _ = _interrupted_run(tmp_path, capsys)
    suite.write_text(suite.read_text().replace('version = "1"', 'version = "2"'))
    refused = run_cli(capsys, "run", "--resume", str(out), "--no-progress")
    assert refused.code == 2
    assert "suites changed" in refused.err


def test_resume_needs_a_run_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty").mkdir()
    refused = run_cli(capsys, "run", "--resume", str(tmp_path / "empty"))
    assert refused.code == 2
    assert "manifest.json" in refused.err


def test_a_new_run_in_the_same_directory_starts_a_new_journal(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, suite, script = _interrupted_run(tmp_path, capsys)
    again = run_cli(
        capsys, "run", "--provider", "scripted", "--script", str(script), "--cases", str(suite),
        "--out", str(out), "--no-progress",
    )  # fmt: skip
    assert again.code == 0, again.err
    assert journal_lines(out / JOURNAL) == CASES


def test_repair_journal_cuts_only_a_partial_last_line(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_bytes(b'{"a": 1}\n{"b": 2}\n{"c"')
    repair_journal(path)
    assert path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'
    repair_journal(path)  # a whole journal is left alone
    assert path.read_bytes() == b'{"a": 1}\n{"b": 2}\n'
    repair_journal(tmp_path / "missing.jsonl")  # no journal yet: nothing to do
