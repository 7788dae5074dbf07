"""Baseline comparison (the gate) and run diffs."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalctl.baselines.changes import classify
from evalctl.baselines.comparison import Comparison
from evalctl.baselines.diff import compare_runs
from evalctl.baselines.gate import STRICT, compare_baseline
from evalctl.errors import ExitCode
from evalctl.results.models import CaseResult, CaseStatus
from tests import factories as f

BASE = f.baseline({"s/a": "pass", "s/b": "fail", "s/c": "pass", "s/d": "flaky"})


def _current(**changes: CaseStatus) -> list[CaseResult]:
    statuses: dict[str, CaseStatus] = {"a": "pass", "b": "fail", "c": "pass", "d": "flaky"}
    statuses.update(changes)
    return [f.case(f"s/{k}", v) for k, v in statuses.items()]


def _compare(
    cases: list[CaseResult],
    *,
    provider: str = "scripted",
    model: str = "script",
    suite_filter: list[str] | None = None,
    case_glob: str | None = None,
) -> Comparison:
    run = f.run(
        cases, provider=provider, model=model, suite_filter=suite_filter, case_glob=case_glob
    )
    # These pin the strict rule's transitions; tests/test_statistical_gate.py the default's.
    return compare_baseline(BASE, run, rule=STRICT)


@pytest.mark.parametrize(
    ("before", "after", "change"),
    [
        ("pass", "pass", "unchanged"),
        ("pass", "fail", "regression"),
        ("pass", "flaky", "regression"),
        ("fail", "pass", "improvement"),
        ("fail", "flaky", "improvement"),
        ("fail", "fail", "unchanged"),
        ("flaky", "pass", "changed"),
        ("flaky", "fail", "changed"),
        ("flaky", "flaky", "unchanged"),
        ("pass", "error", "unscored"),
        ("fail", "skipped", "unscored"),
        ("error", "pass", "changed"),
    ],
)
def test_classify(before: CaseStatus, after: CaseStatus, change: str) -> None:
    assert classify(before, after) == change


def test_identical_run_is_ok() -> None:
    cmp = _compare(_current())
    assert cmp.exit_code == ExitCode.OK
    assert cmp.unchanged == ["s/a", "s/b", "s/c", "s/d"]
    assert not (cmp.regressions or cmp.orphaned or cmp.unscored or cmp.new or cmp.improvements)


def test_regression_fails_the_gate_and_names_the_case_and_checks() -> None:
    cases = _current()
    cases[2] = f.case("s/c", "fail", failed_checks=("os_mapping",))
    cmp = _compare(cases)
    assert cmp.exit_code == ExitCode.GATE_FAILED
    assert [(r.key, r.baseline, r.current, r.failed_checks) for r in cmp.regressions] == [
        ("s/c", "pass", "fail", ["os_mapping"])
    ]


def test_pass_to_flaky_is_a_regression() -> None:
    cmp = _compare(_current(a="flaky"))
    assert [r.key for r in cmp.regressions] == ["s/a"]
    assert cmp.exit_code == ExitCode.GATE_FAILED


def test_improvement_passes_and_spells_out_the_update_command() -> None:
    cmp = compare_baseline(
        BASE,
        f.run(_current(b="pass")),
        results_path=Path("results/run 1/results.json"),
        baseline_path=Path("baselines/local.json"),
    )
    assert cmp.exit_code == ExitCode.OK
    assert [i.key for i in cmp.improvements] == ["s/b"]
    assert cmp.update_command == (
        "evalctl baseline --from 'results/run 1/results.json' --out baselines/local.json"
    )


def test_orphaned_case_fails_the_gate() -> None:
    cmp = _compare([c for c in _current() if c.key != "s/c"])
    assert cmp.orphaned == ["s/c"]
    assert cmp.exit_code == ExitCode.GATE_FAILED


def test_new_case_is_a_warning_only() -> None:
    cmp = _compare([*_current(), f.case("s/e", "fail")])
    assert [(n.key, n.status) for n in cmp.new] == [("s/e", "fail")]
    assert cmp.exit_code == ExitCode.OK


def test_errored_case_is_unscored_exit_3() -> None:
    cases = _current()
    cases[0] = f.case("s/a", "error", error="daemon would not start")
    cmp = _compare(cases)
    assert cmp.exit_code == ExitCode.INFRA
    assert [(u.key, u.status, u.reason, u.in_baseline) for u in cmp.unscored] == [
        ("s/a", "error", "daemon would not start", True)
    ]
    assert not cmp.regressions


def test_regression_outranks_unscored() -> None:
    cmp = _compare(_current(a="error", c="fail"))
    assert cmp.exit_code == ExitCode.GATE_FAILED
    assert [u.key for u in cmp.unscored] == ["s/a"]


def test_new_case_in_error_is_unscored_not_new() -> None:
    cmp = _compare([*_current(), f.case("s/e", "error")])
    assert cmp.new == []
    assert [(u.key, u.in_baseline) for u in cmp.unscored] == [("s/e", False)]
    assert cmp.exit_code == ExitCode.INFRA


def test_baseline_case_now_skipped_is_unscored_with_the_reason() -> None:
    cases = _current()
    cases[1] = f.case("s/b", "skipped", skip_reason="requirement 'catalog' not met")
    cmp = _compare(cases)
    assert [(u.key, u.reason) for u in cmp.unscored] == [("s/b", "requirement 'catalog' not met")]
    assert cmp.exit_code == ExitCode.INFRA


def test_flaky_baseline_changes_do_not_gate() -> None:
    cmp = _compare(_current(d="fail"))
    assert [(c.key, c.current) for c in cmp.flaky_changes] == [("s/d", "fail")]
    assert cmp.exit_code == ExitCode.OK


def test_narrowed_run_does_not_orphan_unselected_cases() -> None:
    by_glob = _compare([f.case("s/a")], case_glob="a")
    assert (by_glob.orphaned, by_glob.out_of_scope, by_glob.exit_code) == ([], 3, 0)
    # Selected but missing is still orphaned.
    by_suite = _compare([f.case("s/a")], suite_filter=["s"])
    assert by_suite.orphaned == ["s/b", "s/c", "s/d"]
    # A run of another suite leaves this baseline's suite alone.
    other = _compare([f.case("t/x")], suite_filter=["t"])
    assert (other.orphaned, other.out_of_scope, [n.key for n in other.new]) == ([], 4, ["t/x"])


def test_model_mismatch_is_warned() -> None:
    cmp = _compare(_current(), provider="local", model="other")
    assert any("provider 'scripted'" in w for w in cmp.warnings)
    assert any("model 'script'" in w for w in cmp.warnings)
    same_name = compare_baseline(
        BASE.model_copy(update={"model_sha256": "a" * 64}),
        f.run(_current(), model_sha256="b" * 64),
    )
    assert same_name.warnings == [
        f"model weights changed: the baseline was made with sha256 {'a' * 64}, "
        f"these results with sha256 {'b' * 64}"
    ]


# ------------------------------------------------------------------ run diff


def test_run_diff_reports_status_changes_and_deltas() -> None:
    a = f.run(
        [
            f.case("s/a", "pass", latency_ms=100, input_tokens=50, output_tokens=10),
            f.case("s/b", "fail", latency_ms=200),
            f.case("s/gone", "pass"),
        ],
        run_id="A",
    )
    b = f.run(
        [
            f.case("s/a", "fail", latency_ms=150, input_tokens=60, output_tokens=30),
            f.case("s/b", "pass", latency_ms=100),
            f.case("s/new", "pass"),
        ],
        run_id="B",
    )
    diff = compare_runs(a, b, path_a=Path("a.json"), path_b=Path("b.json"))
    rows = {c.key: c for c in diff.cases}
    assert list(rows) == ["s/a", "s/b", "s/gone", "s/new"]
    assert (rows["s/a"].change, rows["s/a"].latency_delta_ms, rows["s/a"].tokens_delta) == (
        "regression",
        50.0,
        30,
    )
    assert rows["s/b"].change == "improvement"
    assert (rows["s/gone"].change, rows["s/gone"].status_b, rows["s/gone"].latency_delta_ms) == (
        "removed",
        None,
        None,
    )
    assert rows["s/new"].change == "added"
    assert diff.summary.pass_rate_delta == pytest.approx(2 / 3 - 2 / 3)
    assert diff.summary.input_tokens_delta == 10
    assert diff.summary.output_tokens_delta == 20
    assert diff.summary.latency_p50_delta_ms == pytest.approx(100.0 - 100.0)
    assert (diff.run_a.run_id, diff.run_b.run_id, diff.file_a) == ("A", "B", "a.json")
    assert diff.exit_code == 0
    assert [c.key for c in diff.by_change("regression")] == ["s/a"]


def test_run_diff_summary_uses_recomputed_latency() -> None:
    a = f.run([f.case("s/a", latency_ms=100), f.case("s/b", latency_ms=300)])
    b = f.run([f.case("s/a", latency_ms=400), f.case("s/b", latency_ms=600)])
    diff = compare_runs(a, b)
    assert diff.summary.latency_p50_delta_ms == pytest.approx(300.0)
    assert diff.summary.a.latency_ms.p50 == 200.0
