"""`evalctl report RESULTS --baseline B` gates as `evalctl compare B RESULTS` does: the same
settings (evalctl.toml's compare_gate and compare_alpha, --gate, --alpha) and so the same
verdict and exit code on the page and in its output line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalctl.baselines.model import Baseline, PassCount
from evalctl.baselines.write import write_baseline
from evalctl.results.io import write_run
from evalctl.results.models import CaseStatus
from tests import factories as f
from tests.cli_helpers import run_cli

K = 5
KEYS = [f"s/c{i}" for i in range(6)]


def _files(tmp_path: Path) -> tuple[str, str]:
    """A K-sample baseline where every case passed every sample, and a one-sample run of a
    sampling provider where one of them failed: within noise for the statistical gate, a
    regression for the strict one."""
    baseline = Baseline(
        provider="local",
        model="m",
        baselines=dict.fromkeys(KEYS, "pass"),
        pass_counts={k: PassCount(passed=K, runs=K) for k in KEYS},
    )
    statuses: dict[str, CaseStatus] = {k: "fail" if k == KEYS[0] else "pass" for k in KEYS}
    run = f.run(
        [
            f.case(k, s, failed_checks=("answer",) if s == "fail" else ())
            for k, s in statuses.items()
        ],
        provider="local",
        model="m",
    )
    base = write_baseline(baseline, tmp_path / "baselines" / "local.json")
    results = write_run(run, tmp_path / "run")
    return str(base), str(results)


def test_report_uses_compare_s_gate_settings_from_evalctl_toml(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    base, results = _files(tmp_path)
    (tmp_path / "evalctl.toml").write_text('compare_gate = "strict"\n')
    compared = run_cli(capsys, "compare", base, results)
    assert compared.code == 1, compared.out + compared.err

    page = tmp_path / "report.html"
    done = run_cli(capsys, "report", results, "--html", str(page), "--baseline", base)
    assert done.code == 0, done.err  # report wrote its page; the gate's code is shown
    html = page.read_text()
    assert "FAILED (exit 1)" in html and "OK (exit 0)" not in html
    assert "compare (strict gate): FAILED" in done.out and "(exit 1)" in done.out
    assert KEYS[0] in done.out  # the verdict names the regressed case, as compare's does

    data = json.loads(
        run_cli(capsys, "report", results, "--html", str(page), "--baseline", base, "--json").out
    )
    assert (data["gate"], data["exit_code"]) == ("strict", 1)

    # --gate overrides evalctl.toml, for report as for compare: one failure of a 5/5 case
    # is within noise for the statistical gate.
    flag = ("--gate", "statistical")
    assert run_cli(capsys, "compare", base, results, *flag).code == 0
    done = run_cli(capsys, "report", results, "--html", str(page), "--baseline", base, *flag)
    assert done.code == 0, done.err
    assert "OK (exit 0)" in page.read_text()
    assert "compare (statistical gate): OK" in done.out


def test_report_refuses_gate_settings_without_a_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, results = _files(tmp_path)
    page = str(tmp_path / "report.html")
    done = run_cli(capsys, "report", results, "--html", page, "--gate", "strict")
    assert done.code == 2 and "--gate" in done.err
    done = run_cli(capsys, "report", results, "--html", page, "--alpha", "0.01")
    assert done.code == 2 and "--alpha" in done.err
    assert not Path(page).exists()
