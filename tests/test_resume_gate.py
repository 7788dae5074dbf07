"""Resume keeps the gate (`run --baseline B --confirm R`, then `--resume DIR`).

A run killed (SIGINT or SIGKILL) while it confirms drops, then resumed with `--resume DIR`
alone, gates as the uninterrupted run does: the manifest holds the confirmation plan, the
cases confirmed before the kill keep their samples, the rest are confirmed with seeds no
earlier process handed out. `--resume` takes the `--baseline` and `--confirm` the run
started with and refuses others; the interrupt hint names them; `compare` refuses a case
whose sampled attempts repeat a seed; the plan takes its rule and alpha where `compare` does.

The application under test is a python target that answers by its input alone (no model):
`c2` and `c5` are broken in the run, every case passed all of the baseline's samples. It is
not declared deterministic, so the statistical gate and the confirmation apply to it.
"""

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

from evalctl.errors import ExitCode
from evalctl.results.versions import MANIFEST_VERSION
from evalctl.runner.resume import JOURNAL, MANIFEST, read_manifest
from tests.cli_helpers import run_cli
from tests.conftest import REPO
from tests.target_helpers import unique, write

CASES = 6
BROKEN = "c2,c5"
CONFIRM = "6"

APP = """
import os
import pathlib
import time


def answer(question, temperature, seed):
    broken = os.environ.get("GATEAPP_BROKEN", "").split(",")
    hang = os.environ.get("GATEAPP_HANG")
    # A confirmation sample of c5 (the run itself is greedy): say so, then never answer.
    if hang and question == "c5" and temperature:
        pathlib.Path(hang).write_text(str(seed))
        time.sleep(600)
    return "nope" if question in broken else "hello"
"""


def _suite(directory: Path) -> Path:
    app = unique("gateapp")
    write(directory / f"{app}.py", APP)
    lines = [
        f"""
        [suite]
        name = "gate"
        kind = "assert"
        version = "1"
        temperature = 0
        target = {{ type = "python", function = "{app}:answer", call = "keywords" }}
        """
    ]
    for i in range(1, CASES + 1):
        lines.append(
            f"""
            [[case]]
            id = "c{i}"
            input = {{ question = "c{i}" }}
            [[case.assert]]
            type = "contains"
            value = "hello"
            """
        )
    import textwrap

    return write(directory / "gate.toml", "".join(textwrap.dedent(part) for part in lines))


@pytest.fixture
def project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, Path]:
    """The suite, and a K = 5 baseline of it recorded while every case passed."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GATEAPP_BROKEN", raising=False)
    monkeypatch.delenv("GATEAPP_HANG", raising=False)
    suite = _suite(tmp_path / "cases")
    base = tmp_path / "base.json"
    done = run_cli(
        capsys, "baseline", "--cases", str(suite), "--samples", "5", "--out", str(base),
        "--min-pass-rate", "0",
    )  # fmt: skip
    assert done.code == 0, done.err
    monkeypatch.setenv("GATEAPP_BROKEN", BROKEN)
    return suite, base


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    return run_cli(capsys, "run", "--no-progress", *args)


def _gate(capsys: pytest.CaptureFixture[str], base: Path, run_dir: Path) -> tuple[int, Any]:
    done = run_cli(capsys, "compare", str(base), str(run_dir), "--json")
    return done.code, json.loads(done.out)


def _verdict(report: Any) -> tuple[list[str], list[str]]:
    """The gate's verdict: the regressions and the cases within noise, by key."""
    return (
        sorted(r["key"] for r in report["regressions"]),
        sorted(r["key"] for r in report.get("within_noise", [])),
    )


def _confirmation_seeds(run_dir: Path) -> dict[str, list[int]]:
    data = json.loads((run_dir / "results.json").read_text())
    return {
        case["key"]: [a["sampling"]["seed"] for a in case["attempts"] if a.get("confirmation")]
        for case in data["cases"]
        if any(a.get("confirmation") for a in case["attempts"])
    }


def _start_killable(tmp_path: Path, suite: Path, base: Path, out: Path) -> subprocess.Popen[str]:
    hang = tmp_path / "hanging"
    env = dict(os.environ, PYTHONPATH=str(REPO), GATEAPP_BROKEN=BROKEN, GATEAPP_HANG=str(hang))
    argv = [sys.executable, "-m", "evalctl.cli", "run", "--cases", str(suite), "--out", str(out)]
    argv += ["--baseline", str(base), "--confirm", CONFIRM, "--no-progress"]
    proc = subprocess.Popen(
        argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 300  # a guard against a hung child, not a timing check
    while not hang.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert hang.exists(), "the run never reached the confirmation of c5"
    return proc


@pytest.mark.parametrize("kill", [signal.SIGINT, signal.SIGKILL])
def test_a_run_killed_while_confirming_resumes_to_the_uninterrupted_verdict(
    project: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    kill: signal.Signals,
) -> None:
    suite, base = project
    clean = tmp_path / "clean"
    reference = _run(capsys, "--cases", str(suite), "--baseline", str(base),
                     "--confirm", CONFIRM, "--out", str(clean))  # fmt: skip
    assert reference.code == 0, reference.err
    clean_code, clean_report = _gate(capsys, base, clean)
    assert clean_code == ExitCode.GATE_FAILED
    assert _verdict(clean_report)[0] == ["gate/c2", "gate/c5"]

    killed = tmp_path / "killed"
    proc = _start_killable(tmp_path, suite, base, killed)
    proc.send_signal(kill)
    _, err = proc.communicate(timeout=120)
    if kill == signal.SIGINT:
        assert proc.returncode == ExitCode.INTERRUPTED, err
        # The hint names the whole command: resumed as printed, the run keeps its gate.
        assert f"--resume {killed} --baseline {base} --confirm {CONFIRM}" in " ".join(err.split())
        assert json.loads((killed / "results.json").read_text())["interrupted"] is True
    else:
        assert proc.returncode == -signal.SIGKILL
        assert not (killed / "results.json").exists()
    # c2 was confirmed and journaled before c5 hung; the seeds c5 was about to be sent are on
    # record, though none of its samples is.
    manifest = read_manifest(killed)
    assert manifest.confirm is not None and manifest.confirm.samples == int(CONFIRM)
    drawn = manifest.confirm_seeds_drawn["gate"]
    journaled = [json.loads(line) for line in (killed / JOURNAL).read_text().splitlines()]
    before = [a["sampling"]["seed"] for a in journaled[-1]["attempts"] if a.get("confirmation")]
    assert journaled[-1]["key"] == "gate/c2" and len(before) == int(CONFIRM)
    assert drawn == max(before)

    # `--resume DIR` alone: the manifest's plan confirms what was left.
    resumed = _run(capsys, "--resume", str(killed))
    assert resumed.code == 0, resumed.err
    code, report = _gate(capsys, base, killed)
    assert code == clean_code
    assert _verdict(report) == _verdict(clean_report)
    assert [r["confirmation"] for r in report["regressions"]] == [
        r["confirmation"] for r in clean_report["regressions"]
    ]
    seeds = _confirmation_seeds(killed)
    assert sorted(seeds) == ["gate/c2", "gate/c5"]
    assert seeds["gate/c2"] == before  # kept, not sampled again
    # c5 was confirmed afresh, with seeds above every seed handed out before the kill.
    assert len(seeds["gate/c5"]) == int(CONFIRM) == len(set(seeds["gate/c5"]))
    assert min(seeds["gate/c5"]) > drawn
    final = json.loads((killed / "results.json").read_text())
    assert final["interrupted"] is False
    assert final["settings"]["confirm"]["confirmed"] == ["gate/c2", "gate/c5"]


def test_resume_takes_the_baseline_and_confirm_it_started_with(
    project: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite, base = project
    killed = tmp_path / "killed"
    proc = _start_killable(tmp_path, suite, base, killed)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=120)

    other = tmp_path / "other.json"
    data = json.loads(base.read_text())
    data["pass_counts"]["gate/c1"] = {"passed": 4, "runs": 5}
    other.write_text(json.dumps(data))
    refused = [
        (["--confirm", "3"], "--confirm"),
        (["--confirm", "auto"], "--confirm"),
        (["--baseline", str(other)], "--baseline"),
        (["--baseline", str(other), "--confirm", CONFIRM], "--baseline"),
    ]
    for flags, field in refused:
        done = _run(capsys, "--resume", str(killed), *flags)
        assert done.code == ExitCode.BAD_INPUT, (flags, done.err)
        assert field in done.err and "Traceback" not in done.err
    assert not (killed / "results.json").exists()  # nothing ran
    # The same baseline (by its content, from any path) and the same R are taken again.
    copy = tmp_path / "copy-of-base.json"
    copy.write_text(base.read_text())
    done = _run(capsys, "--resume", str(killed), "--baseline", str(copy), "--confirm", CONFIRM)
    assert done.code == 0, done.err
    assert _confirmation_seeds(killed).keys() == {"gate/c2", "gate/c5"}


def test_resume_refuses_a_baseline_for_a_run_started_without_one(
    project: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite, base = project
    out = tmp_path / "plain"
    assert _run(capsys, "--cases", str(suite), "--out", str(out)).code == 0
    (out / "results.json").unlink()
    for flags in (["--baseline", str(base)], ["--confirm", "2"]):
        done = _run(capsys, "--resume", str(out), *flags)
        assert done.code == ExitCode.BAD_INPUT, done.err
        assert flags[0] in done.err


def test_compare_refuses_a_case_whose_samples_repeat_a_seed(
    project: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite, base = project
    run_dir = tmp_path / "run"
    done = _run(capsys, "--cases", str(suite), "--baseline", str(base), "--confirm", CONFIRM,
                "--out", str(run_dir))  # fmt: skip
    assert done.code == 0, done.err
    data = json.loads((run_dir / "results.json").read_text())
    broken = next(c for c in data["cases"] if c["key"] == "gate/c2")
    # What an older evalctl's resume wrote: the confirmation samples again, same seeds.
    broken["attempts"] += [a for a in broken["attempts"] if a.get("confirmation")]
    copied = tmp_path / "copied.json"
    copied.write_text(json.dumps(data))
    done = run_cli(capsys, "compare", str(base), str(copied))
    assert done.code == ExitCode.BAD_INPUT, done.out + done.err
    assert str(copied) in done.err and "gate/c2" in done.err and "seed" in done.err

    # Greedy repeats answer alike by design: the same seed at temperature 0 still counts.
    data = json.loads((run_dir / "results.json").read_text())
    steady = next(c for c in data["cases"] if c["key"] == "gate/c1")
    greedy = {"temperature": 0.0, "top_p": 1.0, "seed": 0}
    steady["attempts"] = [{**steady["attempts"][0], "sampling": greedy} for _ in range(3)]
    repeats = tmp_path / "repeats.json"
    repeats.write_text(json.dumps(data))
    done = run_cli(capsys, "compare", str(base), str(repeats))
    assert done.code != ExitCode.BAD_INPUT, done.err


def test_the_plan_gates_at_compare_alpha(
    project: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite, base = project
    (tmp_path / "evalctl.toml").write_text("compare_alpha = 0.01\n")
    run_dir = tmp_path / "run"
    done = _run(capsys, "--cases", str(suite), "--baseline", str(base), "--out", str(run_dir))
    assert done.code == 0, done.err
    confirm = json.loads((run_dir / "results.json").read_text())["settings"]["confirm"]
    # The plan's budget is compare's: alpha and its shares, R (auto) chosen for them.
    assert confirm["alpha"] == 0.01
    assert confirm["case_level"] == pytest.approx(0.007)
    assert confirm["check_level"] == pytest.approx(0.002)
    from evalctl import confirmstats

    expected_r = confirmstats.auto_samples(confirm["tested_cases"], 5, 0.01, 0.007, 0)
    assert confirm["samples"] == expected_r
    code, report = _gate(capsys, base, run_dir)
    assert code == ExitCode.GATE_FAILED
    assert _verdict(report)[0] == ["gate/c2", "gate/c5"]
    assert {r["confirmation"] for r in report["regressions"]} == {"confirmed"}


def test_a_strict_gate_is_not_resampled(
    project: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite, base = project
    (tmp_path / "evalctl.toml").write_text('compare_gate = "strict"\n')
    run_dir = tmp_path / "run"
    done = _run(capsys, "--cases", str(suite), "--baseline", str(base), "--out", str(run_dir))
    assert done.code == 0, done.err
    data = json.loads((run_dir / "results.json").read_text())
    assert data["settings"]["confirm"]["tested_cases"] == 0
    assert not any(a.get("confirmation") for c in data["cases"] for a in c["attempts"])
    code, report = _gate(capsys, base, run_dir)
    assert code == ExitCode.GATE_FAILED  # strict: every pass -> fail gates
    assert _verdict(report)[0] == ["gate/c2", "gate/c5"]


def test_an_old_manifest_is_upgraded_and_an_unknown_one_refused(
    project: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite, _ = project
    out = tmp_path / "plain"
    assert _run(capsys, "--cases", str(suite), "--out", str(out)).code == 0
    data = json.loads((out / MANIFEST).read_text())
    assert data["schema_version"] == MANIFEST_VERSION == 2
    old = {k: v for k, v in data.items() if k not in ("confirm", "confirm_seeds_drawn")}
    old.pop("confirm_recorded", None)
    (out / MANIFEST).write_text(json.dumps({**old, "schema_version": 1}))
    manifest = read_manifest(out)
    assert manifest.schema_version == 2 and manifest.confirm_recorded is False
    (out / "results.json").unlink()
    assert _run(capsys, "--resume", str(out)).code == 0

    (out / MANIFEST).write_text(json.dumps({**data, "schema_version": 99}))
    done = _run(capsys, "--resume", str(out))
    assert done.code == ExitCode.BAD_INPUT
    assert "schema_version" in done.err and MANIFEST in done.err and "newer" in done.err
    # A version 1 file holding what only version 2 records claims the wrong version.
    (out / MANIFEST).write_text(
        json.dumps({**data, "schema_version": 1, "confirm_seeds_drawn": {"gate": 3}})
    )
    done = _run(capsys, "--resume", str(out))
    assert done.code == ExitCode.BAD_INPUT and "needs schema_version 2" in done.err
