"""`evalctl report BASELINE --markdown -`: the quality table, every figure from committed files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalctl.baselines.write import build_baseline, write_baseline
from evalctl.results.io import write_json_atomic
from evalctl.results.models import CaseResult, CheckResult, CheckStatus, RunResult
from tests import factories as f
from tests.cli_helpers import run_cli


def _case(key: str, outcomes: dict[str, CheckStatus], latency_ms: float) -> CaseResult:
    checks = [CheckResult(name=n, status=s) for n, s in outcomes.items()]
    status = "fail" if "fail" in outcomes.values() else "pass"
    return f.case(key, status, latency_ms=latency_ms).model_copy(update={"checks": checks})


def _run() -> RunResult:
    return f.run(
        [
            _case("som/a", {"tool_selection": "pass", "min_results": "pass"}, 1000.0),
            _case("som/b", {"tool_selection": "pass", "min_results": "fail"}, 3000.0),
            _case("som/c", {"tool_selection": "fail", "min_results": "n/a"}, 2000.0),
            _case("tri/x", {"os": "pass", "arch": "pass"}, 500.0),
        ],
        run_id="source-run",
    )


def _committed(tmp_path: Path, run: RunResult) -> Path:
    baseline = write_baseline(build_baseline(run, min_pass_rate=0.0), tmp_path / "local.json")
    write_json_atomic(tmp_path / "local.results.json", run)
    return baseline


def test_table_counts_cases_and_checks_with_na_apart_and_latency(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = _committed(tmp_path, _run())
    done = run_cli(capsys, "report", str(baseline), "--markdown", "-")
    assert done.code == 0, done.err
    rows = [line for line in done.out.splitlines() if line.startswith("| ")]
    assert rows[0] == (
        "| suite | cases passed | checks passed | per check (passed/scored) "
        "| latency p50 per case |"
    )
    assert rows[1] == (
        "| som | 1/3 (33%) | 3/5 (60%), 1 n/a "
        "| tool\\_selection 2/3 · min\\_results 1/2 (1 n/a) | 2.0 s |"
    )
    assert rows[2] == "| tri | 1/1 (100%) | 2/2 (100%) | os 1/1 · arch 1/1 | 0.5 s |"
    assert "from local.json and local.results.json (run source-run)" in done.out
    assert "--min-pass-rate 0" in done.out


def test_without_results_beside_it_the_table_has_no_latency(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = _committed(tmp_path, _run())
    (tmp_path / "local.results.json").unlink()
    done = run_cli(capsys, "report", str(baseline), "--markdown", "-")
    assert done.code == 0, done.err
    assert "latency" not in done.out and "| som | 1/3 (33%) | 3/5 (60%), 1 n/a |" in done.out


def test_results_that_are_not_the_baselines_source_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = _committed(tmp_path, _run())
    other = json.loads((tmp_path / "local.results.json").read_text())
    other["run_id"] = "another-run"
    (tmp_path / "local.results.json").write_text(json.dumps(other))
    done = run_cli(capsys, "report", str(baseline), "--markdown", "-")
    assert done.code == 2
    assert "holds run another-run, but the baseline" in done.err
    assert "Traceback" not in done.err


def test_a_baseline_written_run_by_run_reads_its_source_results_from_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalctl.baselines.write import merge_baseline

    whole = _run()
    som = whole.model_copy(update={"cases": whole.cases[:3], "run_id": "som-run"})
    tri = whole.model_copy(update={"cases": whole.cases[3:], "run_id": "tri-run"})
    som.settings.suite_filter = ["som"]
    tri.settings.suite_filter = ["tri"]
    first = build_baseline(som, min_pass_rate=0.0)
    merged, _ = merge_baseline(first, build_baseline(tri, min_pass_rate=0.0), tri)
    baseline = write_baseline(merged, tmp_path / "local.json")
    (tmp_path / "local.results").mkdir()
    write_json_atomic(tmp_path / "local.results" / "som.json", som)
    write_json_atomic(tmp_path / "local.results" / "tri.json", tri)
    done = run_cli(capsys, "report", str(baseline), "--markdown", "-")
    assert done.code == 0, done.err
    assert "from local.json and local.results/ (run tri-run)" in done.out
    assert "| tri | 1/1 (100%) | 2/2 (100%) | os 1/1 · arch 1/1 | 0.5 s |" in done.out
    assert "2.0 s |" in done.out
    # A directory missing the run the baseline names is refused.
    (tmp_path / "local.results" / "tri.json").unlink()
    refused = run_cli(capsys, "report", str(baseline), "--markdown", "-")
    assert refused.code == 2 and "was written from run tri-run" in refused.err


def test_a_sampled_baseline_counts_checks_over_its_samples(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from evalctl.baselines.model import BaselineSampling, PassCount

    baseline = build_baseline(_run(), min_pass_rate=0.0).model_copy(
        update={
            "check_counts": {
                "som/b": {"tool_selection": PassCount(passed=5, runs=5)},
                "som/c": {"tool_selection": PassCount(passed=2, runs=5)},
            },
            "sampling": {
                "som": BaselineSampling(
                    samples=5,
                    seeds=[0, 1, 2, 3, 4],
                    temperature=0.3,
                    top_p=1.0,
                    perturbed=True,
                    perturbation="greedy suite sampled at temperature 0.3",
                )
            },
        }
    )
    path = write_baseline(baseline, tmp_path / "local.json")
    done = run_cli(capsys, "report", str(path), "--markdown", "-")
    assert done.code == 0, done.err
    som = next(line for line in done.out.splitlines() if line.startswith("| som "))
    # som/a's one outcome, then som/b's 5/5 and som/c's 2/5 samples.
    assert "tool\\_selection 8/11" in som
    assert "checks counted over 5 samples per case" in done.out
