"""A matrix cell killed mid-run and resumed (issue 29, deliver 7): `run --resume` of the
cell's directory puts the cell back into `matrix.json`, the matrix reports and `baseline
--from MATRIX_DIR`, as if the matrix had run it uninterrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli
from tests.conftest import REPO
from tests.test_resume import JOURNAL, journal_lines, write_suite

CELL = "scripted-m1"


def test_a_killed_and_resumed_matrix_cell_is_back_in_the_index_reports_and_baselines(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Cell scripted-m1 answers two cases at once and hangs on the third: killed there.
    suite, script = write_suite(tmp_path, delay_s=0.0, hang_from=2)
    out = tmp_path / "matrix"
    argv = [sys.executable, "-m", "tests.echo_cli", "run", "--provider", "scripted"]
    argv += ["--model", "m1", "--model", "m2", "--script", str(script)]
    argv += ["--cases", str(suite), "--out", str(out), "--no-progress"]
    proc = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    journal = out / CELL / JOURNAL
    deadline = time.monotonic() + 120  # a guard against a hung child, not a timing check
    while journal_lines(journal) < 2 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the matrix finished before it could be killed"
    assert not (out / CELL / "results.json").exists()
    # The killed cell is indexed as not finished, saying how to finish it.
    index = json.loads((out / "matrix.json").read_text())
    assert [(c["id"], c["results"]) for c in index["cells"]] == [(CELL, None)]
    assert "--resume" in index["cells"][0]["skip_reason"]

    _, quick = write_suite(tmp_path, delay_s=0.0)  # the same script, without the hang
    assert quick == script
    resumed = run_cli(capsys, "run", "--resume", str(out / CELL), "--no-progress", "--json")
    assert resumed.code == 0, resumed.err
    assert json.loads(resumed.out)["matrix_path"] == str(out.resolve() / "matrix.json")

    index = json.loads((out / "matrix.json").read_text())
    assert [(c["id"], c["results"], c["skip_reason"]) for c in index["cells"]] == [
        (CELL, f"{CELL}/results.json", None)
    ]
    assert index["cells"][0]["model"] == "m1"
    report = (out / "matrix.md").read_text()
    assert f"**{CELL}**" in report and "did not finish" not in report
    assert CELL in (out / "matrix.html").read_text()

    baselines = tmp_path / "baselines"
    written = run_cli(capsys, "baseline", "--from", str(out), "--out", str(baselines), "--json")
    assert written.code == 0, written.err
    assert [b["cell"] for b in json.loads(written.out)["baselines"]] == [CELL]
    baseline = json.loads((baselines / f"{CELL}.json").read_text())
    assert len(baseline["baselines"]) == 8  # every case of the cell, the resumed ones too


def test_resuming_a_run_of_its_own_touches_no_matrix(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite, script = write_suite(tmp_path, delay_s=0.0)
    out = tmp_path / "run"
    done = run_cli(
        capsys,
        *("run", "--provider", "scripted", "--script", str(script), "--cases", str(suite)),
        *("--out", str(out), "--no-progress"),
    )
    assert done.code == 0, done.err
    (out / "results.json").unlink()
    resumed = run_cli(capsys, "run", "--resume", str(out), "--no-progress", "--json")
    assert resumed.code == 0, resumed.err
    assert json.loads(resumed.out)["matrix_path"] is None
    assert not (tmp_path / "matrix.json").exists()
