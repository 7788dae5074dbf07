"""Check-level baselines: a check that regresses inside a case that already failed gates,
named by case and check; improvements are reported; version 1 baselines still read."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalctl.baselines.gate import STRICT, compare_baseline
from evalctl.baselines.model import BASELINE_SCHEMA_VERSION, read_baseline
from evalctl.baselines.write import build_baseline, write_baseline
from evalctl.reports.comparison_markdown import comparison_markdown
from evalctl.results.io import write_run
from evalctl.results.models import CaseResult, CheckResult, CheckStatus, RunResult
from tests import factories as f
from tests.cli_helpers import run_cli
from tests.conftest import REPO


def _case(key: str, outcomes: dict[str, CheckStatus]) -> CaseResult:
    checks = [
        CheckResult(
            name=name,
            status=status,
            expected=f"{name}-expected",
            actual=f"{name}-actual" if status == "fail" else f"{name}-expected",
            message=f"{name} went wrong" if status == "fail" else "",
        )
        for name, status in outcomes.items()
    ]
    case_status = "fail" if any(s == "fail" for s in outcomes.values()) else "pass"
    return f.case(key, case_status).model_copy(update={"checks": checks})


BEFORE = {
    "som/red": {"tool_selection": "pass", "filters": "fail", "min_results": "pass"},
    "som/none": {"tool_selection": "pass", "min_results": "n/a", "grounding": "fail"},
    "som/ok": {"tool_selection": "pass", "grounding": "pass"},
}


def _run(outcomes: dict[str, dict[str, CheckStatus]]) -> list[CaseResult]:
    return [_case(k, v) for k, v in outcomes.items()]


def _baseline_run() -> RunResult:
    return f.run(_run(BEFORE), run_id="base")


def test_baseline_records_each_checks_outcome_with_na_apart() -> None:
    baseline = build_baseline(_baseline_run(), min_pass_rate=0.0)
    assert baseline.schema_version == BASELINE_SCHEMA_VERSION  # checks since version 2
    assert baseline.baselines["som/red"] == "fail"
    assert baseline.checks["som/red"] == BEFORE["som/red"]
    assert baseline.checks["som/none"]["min_results"] == "n/a"


def test_a_check_regressing_inside_a_failing_case_gates_naming_case_and_check() -> None:
    baseline = build_baseline(_baseline_run(), min_pass_rate=0.0)
    after = {**BEFORE, "som/red": {**BEFORE["som/red"], "tool_selection": "fail"}}
    cmp = compare_baseline(baseline, f.run(_run(after)), rule=STRICT)
    assert cmp.regressions == []  # the case failed before and fails now
    assert [(c.key, c.check, c.baseline, c.current) for c in cmp.check_regressions] == [
        ("som/red", "tool_selection", "pass", "fail")
    ]
    change = cmp.check_regressions[0]
    assert (change.expected, change.actual, change.reason) == (
        "tool_selection-expected",
        "tool_selection-actual",
        "tool_selection went wrong",
    )
    assert cmp.exit_code == 1
    assert "1 check regression ·" in cmp.counts_line()


def test_check_improvement_is_reported_and_does_not_gate() -> None:
    baseline = build_baseline(_baseline_run(), min_pass_rate=0.0)
    after = {**BEFORE, "som/red": {**BEFORE["som/red"], "tool_selection": "fail"}}
    after["som/red"]["filters"] = "pass"
    cmp = compare_baseline(baseline, f.run(_run(after)), rule=STRICT)
    assert [(c.key, c.check) for c in cmp.check_improvements] == [("som/red", "filters")]
    assert [(c.key, c.check) for c in cmp.check_regressions] == [("som/red", "tool_selection")]
    only_better = {**BEFORE, "som/red": {**BEFORE["som/red"], "filters": "pass", "x": "fail"}}
    cmp = compare_baseline(baseline, f.run(_run(only_better)), rule=STRICT)
    assert cmp.exit_code == 0 and len(cmp.check_improvements) == 1
    assert "1 check improvement ·" in cmp.counts_line()


def test_na_is_neither_a_regression_nor_an_improvement() -> None:
    baseline = build_baseline(_baseline_run(), min_pass_rate=0.0)
    after = {**BEFORE, "som/none": {**BEFORE["som/none"], "min_results": "fail"}}
    after["som/red"] = {**BEFORE["som/red"], "min_results": "n/a"}
    cmp = compare_baseline(baseline, f.run(_run(after)), rule=STRICT)
    assert cmp.check_regressions == [] and cmp.check_improvements == []
    assert cmp.exit_code == 0


def test_case_regression_carries_expected_actual_and_reason() -> None:
    baseline = build_baseline(_baseline_run(), min_pass_rate=0.0)
    after = {**BEFORE, "som/ok": {"tool_selection": "pass", "grounding": "fail"}}
    cmp = compare_baseline(baseline, f.run(_run(after)), rule=STRICT)
    assert [c.key for c in cmp.regressions] == ["som/ok"]
    failure = cmp.regressions[0].failures[0]
    assert (failure.name, failure.expected, failure.actual, failure.reason) == (
        "grounding",
        "grounding-expected",
        "grounding-actual",
        "grounding went wrong",
    )
    text = comparison_markdown(cmp)
    assert "FAILED (exit 1)" in text
    assert "| som/ok | grounding | pass → fail | grounding-expected | grounding-actual |" in text


def test_a_version_1_baseline_still_reads_and_says_what_it_cannot_see(tmp_path: Path) -> None:
    path = f.write_json(
        tmp_path / "old.json",
        {
            "schema_version": 1,
            "provider": "scripted",
            "model": "script",
            "baselines": {"som/red": "fail", "som/none": "fail", "som/ok": "pass"},
        },
    )
    baseline = read_baseline(path)
    assert baseline.checks == {}
    after = {**BEFORE, "som/red": {**BEFORE["som/red"], "tool_selection": "fail"}}
    cmp = compare_baseline(baseline, f.run(_run(after)), rule=STRICT)
    assert cmp.exit_code == 0 and cmp.check_regressions == []
    assert any("schema_version 1" in w for w in cmp.warnings)


def test_cli_exits_1_naming_case_and_check_and_writes_the_step_summary(tmp_path: Path) -> None:
    base = write_baseline(
        build_baseline(_baseline_run(), min_pass_rate=0.0), tmp_path / "baseline.json"
    )
    after = {**BEFORE, "som/red": {**BEFORE["som/red"], "tool_selection": "fail"}}
    results = write_run(f.run(_run(after), run_id="now"), tmp_path / "now")
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "GITHUB_STEP_SUMMARY": str(summary)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalctl.cli",
            "compare",
            "--gate",
            "strict",
            str(base),
            str(results),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "1 check regression (som/red: tool_selection)" in done.stderr
    assert "tool_selection-actual" in done.stdout  # expected/actual shown on the console
    text = summary.read_text()
    assert text.startswith("earlier step\n## ❌ evalctl compare: FAILED (exit 1)")
    # Markdown-escaped cells: `tool\_selection` renders as tool_selection.
    assert "| som/red | tool\\_selection | pass → fail |" in text
    assert "tool\\_selection went wrong" in text
    # --json carries the same check-level verdict.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "evalctl.cli",
            "compare",
            "--gate",
            "strict",
            str(base),
            str(results),
            "--json",
        ],
        cwd=tmp_path,
        env={**env, "GITHUB_STEP_SUMMARY": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    data = json.loads(done.stdout)
    assert data["check_regressions"][0]["check"] == "tool_selection"
    assert data["exit_code"] == 1


def test_console_shows_expected_actual_and_reason_of_a_regressed_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_baseline(
        build_baseline(_baseline_run(), min_pass_rate=0.0), tmp_path / "baseline.json"
    )
    after = {**BEFORE, "som/ok": {"tool_selection": "pass", "grounding": "fail"}}
    results = write_run(f.run(_run(after), run_id="now"), tmp_path / "now")
    done = run_cli(capsys, "compare", "--gate", "strict", str(base), str(results))
    assert done.code == 1
    lines = done.out.splitlines()
    at = lines.index("som/ok")
    assert lines[at + 1 : at + 3] == [
        "  grounding: expected grounding-expected, actual grounding-actual",
        "    grounding went wrong",
    ]
    assert "1 regression · 0 check regressions ·" in done.out


def test_a_check_regressing_inside_a_passing_case_is_a_note_that_does_not_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An `assert` case with threshold < 1 still passes with a failed check: compare lists
    # the check (text, --json, step summary) without gating on it.
    baseline = build_baseline(_baseline_run(), min_pass_rate=0.0)
    after = _run({**BEFORE, "som/ok": {"tool_selection": "pass", "grounding": "fail"}})
    after = [c.model_copy(update={"status": "pass"}) if c.key == "som/ok" else c for c in after]
    cmp = compare_baseline(baseline, f.run(after), rule=STRICT)
    assert cmp.exit_code == 0 and cmp.regressions == [] and cmp.check_regressions == []
    noted = cmp.passing_check_regressions
    assert [(c.key, c.check, c.baseline, c.current, c.case_status) for c in noted] == [
        ("som/ok", "grounding", "pass", "fail", "pass")
    ]
    assert "### Check regressions inside passing cases (not gating)" in comparison_markdown(cmp)
    assert "| som/ok | grounding | pass → fail | grounding-expected |" in comparison_markdown(cmp)

    base = write_baseline(baseline, tmp_path / "baseline.json")
    results = write_run(f.run(after, run_id="now"), tmp_path / "now")
    text = run_cli(capsys, "compare", "--gate", "strict", str(base), str(results))
    assert text.code == 0, text.err
    assert "Check regressions inside passing cases" in text.out
    assert "grounding-actual" in text.out
    data = json.loads(
        run_cli(capsys, "compare", "--gate", "strict", str(base), str(results), "--json").out
    )
    assert data["passing_check_regressions"][0]["check"] == "grounding"
    assert data["exit_code"] == 0
