"""`compare` on flaky cases: a drop in pass rate gates only when the intervals say it is real."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalctl.baselines.diff import compare_runs
from evalctl.baselines.gate import STRICT, compare_baseline
from evalctl.baselines.model import Baseline, PassCount, read_baseline
from evalctl.baselines.write import build_baseline, write_baseline
from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.config import Settings
from evalctl.errors import BadInputError
from evalctl.providers.scripted import Script, ScriptedProvider, load_script
from evalctl.results.io import write_run
from evalctl.results.models import Attempt, CaseResult, CaseStatus
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from evalctl.stats import wilson_interval
from tests import factories as f
from tests.cli_helpers import run_cli


def repeated(key: str, passed: int, runs: int) -> CaseResult:
    """A case run `runs` times, `passed` of them passing, folded the way the runner folds."""
    status: CaseStatus = "pass" if passed == runs else "fail" if passed == 0 else "flaky"
    case = f.case(key, status)
    interval = wilson_interval(passed, runs)
    return case.model_copy(
        update={
            "attempts": [
                Attempt(status="pass" if i < passed else "fail", latency_ms=10.0)
                for i in range(runs)
            ],
            "pass_rate": passed / runs,
            "pass_ci_low": interval.low,
            "pass_ci_high": interval.high,
        }
    )


def flaky_baseline(passed: int | None, runs: int | None, key: str = "s/a") -> Baseline:
    counts = {key: PassCount(passed=passed, runs=runs)} if passed is not None and runs else {}
    return Baseline(
        provider="scripted", model="script", baselines={key: "flaky"}, pass_counts=counts
    )


def test_credible_drop_of_a_flaky_case_is_a_regression() -> None:
    cmp = compare_baseline(flaky_baseline(9, 10), f.run([repeated("s/a", 2, 10)]), rule=STRICT)
    assert [c.key for c in cmp.regressions] == ["s/a"]
    change = cmp.regressions[0]
    assert change.baseline_rate is not None and change.current_rate is not None
    assert (change.baseline_rate.passed, change.baseline_rate.runs) == (9, 10)
    assert change.current_rate.high < change.baseline_rate.low
    assert "dropped" in (change.reason or "")
    assert cmp.exit_code == 1


def test_flaky_to_fail_with_enough_runs_is_a_regression() -> None:
    cmp = compare_baseline(flaky_baseline(9, 10), f.run([repeated("s/a", 0, 10)]), rule=STRICT)
    assert [(c.baseline, c.current) for c in cmp.regressions] == [("flaky", "fail")]
    assert cmp.exit_code == 1


def test_overlapping_intervals_do_not_gate() -> None:
    cmp = compare_baseline(flaky_baseline(9, 10), f.run([repeated("s/a", 5, 10)]), rule=STRICT)
    assert cmp.regressions == []
    assert cmp.unchanged == ["s/a"]  # still flaky, no credible change
    assert cmp.exit_code == 0


def test_one_failed_run_cannot_prove_a_drop() -> None:
    cmp = compare_baseline(flaky_baseline(9, 10), f.run([repeated("s/a", 0, 1)]), rule=STRICT)
    assert cmp.regressions == []
    assert [c.current for c in cmp.flaky_changes] == ["fail"]
    assert "not a credible change" in (cmp.flaky_changes[0].reason or "")
    assert cmp.exit_code == 0


def test_flaky_baseline_without_counts_never_gates() -> None:
    cmp = compare_baseline(flaky_baseline(None, None), f.run([repeated("s/a", 0, 10)]), rule=STRICT)
    assert cmp.regressions == []
    assert "no pass counts" in (cmp.flaky_changes[0].reason or "")
    assert cmp.exit_code == 0


def test_credible_rise_is_an_improvement() -> None:
    cmp = compare_baseline(flaky_baseline(2, 10), f.run([repeated("s/a", 10, 10)]), rule=STRICT)
    assert [(c.key, c.current) for c in cmp.improvements] == [("s/a", "pass")]
    assert "rose" in (cmp.improvements[0].reason or "")


def test_pass_to_flaky_stays_a_regression() -> None:
    baseline = f.baseline({"s/a": "pass"})
    cmp = compare_baseline(baseline, f.run([repeated("s/a", 9, 10)]), rule=STRICT)
    assert [c.key for c in cmp.regressions] == ["s/a"]


def test_run_diff_uses_the_same_rule() -> None:
    a = f.run([repeated("s/a", 9, 10), repeated("s/b", 9, 10)])
    b = f.run([repeated("s/a", 1, 10), repeated("s/b", 6, 10)])
    changes = {c.key: c.change for c in compare_runs(a, b).cases}
    assert changes == {"s/a": "regression", "s/b": "unchanged"}


def test_baseline_from_repeated_run_keeps_pass_counts(tmp_path: Path) -> None:
    run = f.run([repeated("s/a", 7, 10), repeated("s/b", 10, 10), f.case("s/c")])
    baseline = build_baseline(run)
    assert baseline.baselines == {"s/a": "flaky", "s/b": "pass", "s/c": "pass"}
    # s/c ran once: a count of 1/1 adds nothing to its status, so none is stored.
    assert {k: v.as_tuple() for k, v in baseline.pass_counts.items()} == {
        "s/a": (7, 10),
        "s/b": (10, 10),
    }
    path = write_baseline(baseline, tmp_path / "b.json")
    assert read_baseline(path).pass_counts == baseline.pass_counts


def test_baseline_without_repeats_keeps_the_familiar_shape(tmp_path: Path) -> None:
    path = write_baseline(build_baseline(f.run([f.case("s/a")])), tmp_path / "b.json")
    assert "pass_counts" not in json.loads(path.read_text())


def test_pass_counts_for_unknown_cases_are_refused(tmp_path: Path) -> None:
    data = flaky_baseline(3, 5).model_dump() | {"pass_counts": {"s/zz": {"passed": 1, "runs": 2}}}
    path = f.write_json(tmp_path / "b.json", data)
    with pytest.raises(BadInputError, match="not in baselines"):
        read_baseline(path)


def test_compare_command_gates_on_the_drop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = write_baseline(flaky_baseline(9, 10), tmp_path / "baseline.json")
    dropped_run = write_run(f.run([repeated("s/a", 2, 10)]), tmp_path / "dropped")
    noisy_run = write_run(f.run([repeated("s/a", 6, 10)]), tmp_path / "noisy")

    gated = run_cli(
        capsys, "compare", "--gate", "strict", str(baseline), str(dropped_run), "--json"
    )
    assert gated.code == 1
    out = json.loads(gated.out)
    assert out["regressions"][0]["current_rate"]["passed"] == 2

    passed = run_cli(capsys, "compare", "--gate", "strict", str(baseline), str(noisy_run))
    assert passed.code == 0, passed.err

    helped = run_cli(capsys, "compare", "--help")
    # Paragraphs wrap at the terminal's width: words are compared, not lines.
    assert "Wilson 95% interval" in " ".join(helped.out.split())
    assert "docs/flaky.md" in helped.out


class _EveryOtherTryWrong(ScriptedProvider):
    """Answers echo/hello wrongly on every second try: a flaky case, on demand."""

    def __init__(self, script: Script) -> None:
        super().__init__(script)
        self.tries = 0

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        response = super().complete(request, timeout=timeout)
        if request.tag == "echo/hello":
            self.tries += 1
            if self.tries % 2 == 0:
                return response.model_copy(update={"content": "wrong"})
        return response


def test_repeats_record_rate_and_interval(echo_suite: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.toml"
    script.write_text('[[cases."echo/hello"]]\ncontent = "hello"\n\n[[default]]\ncontent = "x"\n')
    request = RunRequest(
        paths=[echo_suite], case_glob="hello", out_dir=tmp_path / "o", repeats=5,
        show_progress=False,
    )  # fmt: skip
    provider = _EveryOtherTryWrong(load_script(script))
    outcome = execute_run(request, Settings(), {}, provider_override=provider)
    (case,) = outcome.result.cases
    expected = wilson_interval(3, 5)
    assert case.status == "flaky"
    assert case.pass_counts() == (3, 5)
    assert case.pass_rate == 0.6
    assert case.pass_ci_low == pytest.approx(expected.low, abs=1e-4)
    assert case.pass_ci_high == pytest.approx(expected.high, abs=1e-4)
    baseline = build_baseline(outcome.result, min_pass_rate=0.0)
    assert baseline.baselines == {"echo/hello": "flaky"}
    assert baseline.pass_counts["echo/hello"].as_tuple() == (3, 5)
