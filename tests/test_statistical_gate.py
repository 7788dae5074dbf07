"""The statistical gate (the default `compare --gate`), the platform line and the metric
gates, on hand-built sampled baselines and runs: no model, nothing timed."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from evalctl.baselines.budget import Budget
from evalctl.baselines.gate import METRIC_MARGIN, STRICT, compare_baseline, rule_named
from evalctl.baselines.model import Baseline, PassCount, SuiteMetrics, read_baseline
from evalctl.baselines.write import write_baseline
from evalctl.chat import Usage
from evalctl.config import Settings
from evalctl.errors import BadInputError, ExitCode
from evalctl.providers.scripted import ScriptedProvider, load_script
from evalctl.reports.comparison_markdown import comparison_markdown
from evalctl.reports.run_page import run_page
from evalctl.results.io import read_run, write_run
from evalctl.results.models import (
    Attempt,
    CaseResult,
    CaseStatus,
    CheckResult,
    CheckStatus,
    RunResult,
    SuiteGate,
    ToolCallRecord,
)
from evalctl.results.platform import Platform
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from evalctl.stats import t_quantile
from tests import factories as f
from tests.cli_helpers import run_cli

K = 5


def _status(passed: int, runs: int) -> CaseStatus:
    return "pass" if passed == runs else "fail" if passed == 0 else "flaky"


def sampled(
    counts: dict[str, tuple[int, int]],
    *,
    checks: dict[str, dict[str, tuple[int, int]]] | None = None,
    platform: Platform | None = None,
    metrics: dict[str, SuiteMetrics] | None = None,
) -> Baseline:
    """A schema-3 baseline: each case's (passed, samples), optionally each check's."""
    checks = checks or {}
    return Baseline(
        provider="scripted",
        model="script",
        baselines={k: _status(*c) for k, c in counts.items()},
        pass_counts={k: PassCount(passed=p, runs=n) for k, (p, n) in counts.items()},
        check_counts={
            k: {name: PassCount(passed=p, runs=n) for name, (p, n) in v.items()}
            for k, v in checks.items()
        },
        checks={
            k: {name: "pass" if p == n else "fail" for name, (p, n) in v.items()}
            for k, v in checks.items()
        },
        platform=platform,
        metrics=metrics or {},
    )


def ran(
    key: str,
    passed: int,
    runs: int = 1,
    *,
    checks: dict[str, CheckStatus] | None = None,
    check_counts: dict[str, tuple[int, int]] | None = None,
    output_tokens: int = 10,
) -> CaseResult:
    """A run's case with `runs` scored attempts, `passed` of them passing."""
    status = _status(passed, runs)
    attempts = [
        Attempt(
            status="pass" if i < passed else "fail",
            latency_ms=100.0,
            usage=Usage(output_tokens=output_tokens),
        )
        for i in range(runs)
    ]
    outcomes = checks or {"answer": "pass" if status == "pass" else "fail"}
    return f.case(key, status).model_copy(
        update={
            "attempts": attempts,
            "checks": [CheckResult(name=n, status=s) for n, s in outcomes.items()],
            "check_counts": {
                n: PassCount(passed=p, runs=r) for n, (p, r) in (check_counts or {}).items()
            },
        }
    )


STABLE = {f"s/c{i:02d}": (K, K) for i in range(20)}


# ------------------------------------------------------------------ cases


def test_a_planted_regression_exits_1_and_names_every_case_that_passed() -> None:
    broken = {f"s/ok{i}": (K, K) for i in range(10)}
    failing = {f"s/bad{i}": (0, K) for i in range(2)}
    baseline = sampled({**broken, **failing})
    run = f.run([ran(k, 0) for k in {**broken, **failing}])
    cmp = compare_baseline(baseline, run)
    assert cmp.gate == "statistical" and cmp.exit_code == ExitCode.GATE_FAILED
    assert sorted(r.key for r in cmp.regressions) == sorted(broken)
    first = cmp.regressions[0]
    # The evidence is the suite's: no single 5/5 -> 0/1 is significant on its own.
    assert first.cause == "suite" and first.p_value == pytest.approx(1 / 6)
    assert "5/5 -> 0/1, p = 0.17" in (first.reason or "")
    assert "clean-baseline flips test: p = " in (first.reason or "")
    flips = next(t for t in cmp.suites["s"].tests if t.name == "clean_baseline_flips")
    assert flips.fired and flips.p_value < 1e-6
    assert cmp.within_noise == [] and sorted(cmp.unchanged) == sorted(failing)


def test_one_stable_case_flipping_among_many_is_within_noise_and_listed() -> None:
    keys = list(STABLE)
    run = f.run([ran(k, 0 if k == keys[3] else 1) for k in keys])
    cmp = compare_baseline(sampled(STABLE), run)
    assert cmp.exit_code == ExitCode.OK and cmp.regressions == []
    (noise,) = cmp.within_noise
    assert noise.key == keys[3] and noise.reason == "5/5 -> 0/1, p = 0.17"
    assert noise.baseline_rate is not None and noise.baseline_rate.passed == K
    assert "1 within noise" in cmp.counts_line()
    assert not any("one sample per case" in w for w in cmp.warnings)  # it is sampled
    summary = comparison_markdown(cmp)
    assert "### Changed, within noise (not gating)" in summary
    # Both sides by their sampled rates; `>` is escaped, so the cell renders as written.
    assert f"| {keys[3]} | answer | ✅ 5/5 → ❌ 0/1 (5/5 -&gt; 0/1, p = 0.17) |" in summary
    # The original rule fails the same run.
    strict = compare_baseline(sampled(STABLE), run, rule=STRICT)
    assert strict.exit_code == ExitCode.GATE_FAILED
    assert [r.key for r in strict.regressions] == [keys[3]]


def test_an_improvement_carries_both_rates_and_no_p_value() -> None:
    cmp = compare_baseline(
        sampled({"s/a": (0, K), "s/b": (K, K)}), f.run([ran("s/a", 1), ran("s/b", 1)])
    )
    assert cmp.exit_code == ExitCode.OK
    (better,) = cmp.improvements
    assert (better.key, better.reason) == ("s/a", "0/5 -> 1/1")


def test_repeats_make_one_case_significant_on_its_own() -> None:
    # 5/5 -> 0/10: Fisher p = 1/C(15,5), far under alpha even after Holm.
    keys = list(STABLE)
    run = f.run([ran(k, 0 if k == keys[0] else 10, 10) for k in keys])
    cmp = compare_baseline(sampled(STABLE), run)
    assert [r.key for r in cmp.regressions] == [keys[0]]
    assert cmp.regressions[0].cause == "case"
    assert "its own test" in (cmp.regressions[0].reason or "")


def test_alpha_is_the_rule_s_and_reported() -> None:
    broken = {f"s/ok{i}": (K, K) for i in range(3)}
    run = f.run([ran(k, 0) for k in broken])
    # Three flips of 1/6 each: p = 1/216, under 3/4 of 0.05 but not of 0.001.
    assert compare_baseline(sampled(broken), run).exit_code == ExitCode.GATE_FAILED
    strict_alpha = rule_named("statistical", sampled(broken), run, 0.001)
    cmp = compare_baseline(sampled(broken), run, rule=strict_alpha)
    assert cmp.exit_code == ExitCode.OK and cmp.alpha == 0.001
    assert len(cmp.within_noise) == 3


# ------------------------------------------------------------------ checks


def test_a_check_drop_is_weighed_like_a_case() -> None:
    # A case failing either way; its `format` check passed all 5 samples.
    baseline = sampled({"s/a": (0, K)}, checks={"s/a": {"format": (K, K), "content": (0, K)}})
    one = f.run([ran("s/a", 0, checks={"format": "fail", "content": "fail"})])
    cmp = compare_baseline(baseline, one)
    assert cmp.exit_code == ExitCode.OK and cmp.check_regressions == []
    (noise,) = cmp.check_within_noise
    assert (noise.check, noise.evidence) == ("format", "5/5 -> 0/1, p = 0.17")
    # Strict: any check pass -> fail inside a failing case gates.
    assert compare_baseline(baseline, one, rule=STRICT).exit_code == ExitCode.GATE_FAILED

    repeated = f.run(
        [
            ran(
                "s/a",
                0,
                10,
                checks={"format": "fail", "content": "fail"},
                check_counts={"format": (0, 10), "content": (0, 10)},
            )
        ]
    )
    cmp = compare_baseline(baseline, repeated)
    assert cmp.exit_code == ExitCode.GATE_FAILED
    (worse,) = cmp.check_regressions
    assert worse.check == "format" and worse.p_value is not None and worse.p_value < 0.001
    assert "its own test" in (worse.evidence or "")


def test_a_check_broken_across_many_cases_is_caught_with_one_run_sample() -> None:
    # Twelve cases that fail either way; the `format` check of each passed all 5 samples.
    keys = [f"s/c{i:02d}" for i in range(12)]
    checks = {"format": (K, K), "content": (0, K)}
    baseline = sampled(dict.fromkeys(keys, (0, K)), checks=dict.fromkeys(keys, checks))
    run = f.run([ran(k, 0, checks={"format": "fail", "content": "fail"}) for k in keys])
    cmp = compare_baseline(baseline, run)
    assert cmp.exit_code == ExitCode.GATE_FAILED and cmp.regressions == []
    assert sorted((c.key, c.check) for c in cmp.check_regressions) == [(k, "format") for k in keys]
    assert "clean-baseline check flips test" in (cmp.check_regressions[0].evidence or "")
    (test,) = cmp.suites["s"].check_tests
    assert test.name == "clean_baseline_check_flips" and test.fired
    # One such case alone is a 1-in-6 event: within noise.
    one = f.run([ran(k, 0, checks={"format": "fail" if k == keys[0] else "pass"}) for k in keys])
    assert [c.key for c in compare_baseline(baseline, one).check_within_noise] == [keys[0]]


# ------------------------------------------------------------------ older baselines


def test_version_1_and_2_baselines_still_compare(tmp_path: Path) -> None:
    keys = [f"s/c{i}" for i in range(8)]
    v1 = read_baseline(
        f.write_json(
            tmp_path / "v1.json",
            {
                "schema_version": 1,
                "provider": "scripted",
                "model": "script",
                "baselines": dict.fromkeys(keys, "pass"),
            },
        )
    )
    same = f.run([ran(k, 1) for k in keys])
    assert compare_baseline(v1, same).exit_code == ExitCode.OK
    one_flip = f.run([ran(k, 0 if k == keys[0] else 1) for k in keys])
    flipped = compare_baseline(v1, one_flip)
    assert [c.key for c in flipped.within_noise] == [keys[0]]
    assert any("one sample per case" in w for w in flipped.warnings)
    # Every case failing: eight flips of probability 1/2 each, p = 1/256.
    all_fail = f.run([ran(k, 0) for k in keys])
    assert sorted(r.key for r in compare_baseline(v1, all_fail).regressions) == keys

    v2 = read_baseline(
        f.write_json(
            tmp_path / "v2.json",
            {
                "schema_version": 2,
                "provider": "scripted",
                "model": "script",
                "baselines": {"s/a": "fail", "s/b": "flaky"},
                "checks": {"s/a": {"format": "pass"}},
            },
        )
    )
    run = f.run([ran("s/a", 0, checks={"format": "fail"}), ran("s/b", 0)])
    cmp = compare_baseline(v2, run)
    # One sample of each side proves nothing; the flaky case without counts never gates.
    assert cmp.exit_code == ExitCode.OK
    assert [(c.key, c.check) for c in cmp.check_within_noise] == [("s/a", "format")]
    assert [c.key for c in cmp.flaky_changes] == ["s/b"]


# ------------------------------------------------------------------ the CLI


def _write(tmp_path: Path, baseline: Baseline, run: RunResult) -> tuple[str, str]:
    base = write_baseline(baseline, tmp_path / "baseline.json")
    results = write_run(run, tmp_path / "now")
    return str(base), str(results)


def test_cli_default_is_statistical_and_json_carries_the_p_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    keys = list(STABLE)
    base, results = _write(
        tmp_path, sampled(STABLE), f.run([ran(k, 0 if k == keys[0] else 1) for k in keys])
    )
    text = run_cli(capsys, "compare", base, results)
    assert text.code == 0, text.err
    assert "Changed, within noise" in text.out and "5/5 -> 0/1, p = 0.17" in text.out
    data = json.loads(run_cli(capsys, "compare", base, results, "--json").out)
    assert data["gate"] == "statistical" and data["alpha"] == 0.05
    assert data["within_noise"][0]["p_value"] == pytest.approx(1 / 6)
    tests = {t["name"]: t for t in data["suites"]["s"]["tests"]}
    assert set(tests) == {"stratified_mcnemar", "clean_baseline_flips"}
    assert tests["clean_baseline_flips"]["p_value"] == pytest.approx(1 / 6)
    strict = run_cli(capsys, "compare", "--gate", "strict", base, results)
    assert strict.code == 1 and f"1 regression ({keys[0]})" in strict.err


@pytest.mark.parametrize("alpha", ["0", "1", "-0.1"])
def test_an_alpha_outside_0_1_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], alpha: str
) -> None:
    base, results = _write(tmp_path, sampled(STABLE), f.run([ran(k, 1) for k in STABLE]))
    result = run_cli(capsys, "compare", "--alpha", alpha, base, results)
    assert result.code == 2 and "--alpha" in result.err and "Traceback" not in result.err


# ------------------------------------------------------------------ the platform line


def _platform(*features: str) -> Platform:
    return Platform(provider="local", model="m", llama_cpp="0.3.36", cpu_features=list(features))


def test_the_platform_line_appears_exactly_when_platforms_differ(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run = f.run([ran(k, 1) for k in STABLE]).model_copy(update={"platform": _platform("SSE3")})
    differs = sampled(STABLE, platform=_platform("SSE3", "AVX", "AVX2"))
    cmp = compare_baseline(differs, run)
    assert cmp.platform_line == "platform differs: cpu_features: AVX,AVX2 -> none"
    assert cmp.exit_code == ExitCode.OK  # a note, never a verdict
    assert compare_baseline(sampled(STABLE, platform=_platform("SSE3")), run).platform_line is None
    assert "platform differs: cpu_features: AVX,AVX2 -&gt; none" in run_page(run, cmp)
    assert compare_baseline(sampled(STABLE), run).platform_line is None  # not recorded

    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    base, results = _write(tmp_path, differs, run)
    text = run_cli(capsys, "compare", base, results)
    assert text.out.count("platform differs: cpu_features: AVX,AVX2 -> none") == 1
    assert "platform differs: cpu\\_features" in summary.read_text()
    data = json.loads(run_cli(capsys, "compare", base, results, "--json").out)
    assert data["platform_changes"] == ["cpu_features: AVX,AVX2 -> none"]

    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    base, results = _write(tmp_path, sampled(STABLE, platform=_platform("SSE3")), run)
    assert "platform differs" not in run_cli(capsys, "compare", base, results).out


# ------------------------------------------------------------------ metric gates


def _tokens(values: list[float]) -> SuiteMetrics:
    return SuiteMetrics(
        output_tokens=values,
        latency_p50_ms=[100.0] * len(values),
        latency_p95_ms=[100.0] * len(values),
    )


def test_metric_gates_only_where_a_suite_asked() -> None:
    counts = {"g/a": (K, K), "g/b": (K, K), "n/a": (K, K)}
    baseline = sampled(counts, metrics={"g": _tokens([10.0] * K), "n": _tokens([10.0] * K)})
    run = f.run([ran(k, 1, output_tokens=20) for k in counts])
    run.settings.gates = {"g": SuiteGate(tokens_out=0.25)}
    cmp = compare_baseline(baseline, run)
    assert cmp.exit_code == ExitCode.GATE_FAILED and cmp.regressions == []
    (over,) = cmp.metric_regressions
    assert (over.key, over.metric, over.run, over.limit) == ("g", "tokens_out", 20.0, 12.5)
    assert "1 metric regression (g: tokens_out)" in cmp.verdict.summary
    # Reported for both suites; a limit only where the suite gates.
    reported = {s: {m.metric: m for m in ms} for s, ms in cmp.metrics.items()}
    assert reported["n"]["tokens_out"].run == 20.0 and reported["n"]["tokens_out"].limit is None
    assert reported["g"]["latency_p50"].run == 100.0 and reported["g"]["cost"].run is None

    page = run_page(run, cmp)
    assert "Suite metrics" in page and "gates above 12.5" in page
    # Within the tolerance: 12 <= 10 * 1.25.
    run = f.run([ran(k, 1, output_tokens=12) for k in counts])
    run.settings.gates = {"g": SuiteGate(tokens_out=0.25)}
    assert compare_baseline(baseline, run).metric_regressions == []


def test_the_baseline_s_spread_widens_the_metric_limit() -> None:
    # The one-sided prediction bound on the log scale (evalctl.baselines.metrics) at the metric
    # gates' share of the budget (one metric gated: all of it), raised 10%: logs of 8, 8, 12,
    # 12 have mean log(sqrt(96)) and sd 0.234.
    baseline = sampled({"g/a": (4, 4)}, metrics={"g": _tokens([8.0, 8.0, 12.0, 12.0])})
    logs = [math.log(v) for v in (8.0, 8.0, 12.0, 12.0)]
    rate = Budget().metrics / METRIC_MARGIN
    margin = t_quantile(1 - rate, 3) * statistics.stdev(logs) * math.sqrt(1 / 4 + 1)
    limit = 1.1 * math.exp(statistics.fmean(logs) + margin)
    assert limit == pytest.approx(56.38, abs=0.01)
    for tokens, gated in ((55, False), (58, True)):
        run = f.run([ran("g/a", 1, output_tokens=tokens)])
        run.settings.gates = {"g": SuiteGate(tokens_out=0.1)}
        cmp = compare_baseline(baseline, run)
        assert bool(cmp.metric_regressions) is gated
        (report,) = [m for m in cmp.metrics["g"] if m.metric == "tokens_out"]
        assert report.limit == pytest.approx(limit)


def test_suite_gate_is_recorded_by_the_runner_and_checked(echo_suite: Path, tmp_path: Path) -> None:
    text = echo_suite.read_text().replace(
        "max_turns = 3\n", "max_turns = 3\n\n[suite.gate]\ntokens_out = 0.5\nlatency_p95 = 1\n"
    )
    echo_suite.write_text(text)
    script = tmp_path / "script.toml"
    script.write_text('[[default]]\ncontent = "hello"\n')
    request = RunRequest(paths=[echo_suite], out_dir=tmp_path / "o", show_progress=False)
    outcome = execute_run(request, Settings(), {}, provider_override=_scripted(script))
    assert outcome.result.settings.gates == {"echo": SuiteGate(tokens_out=0.5, latency_p95=1)}

    echo_suite.write_text(text.replace("latency_p95 = 1", "latency_p99 = 1"))
    with pytest.raises(BadInputError, match="latency_p99"):
        execute_run(request, Settings(), {}, provider_override=_scripted(script))


def _scripted(script: Path) -> ScriptedProvider:
    return ScriptedProvider(load_script(script))


def test_evalctl_toml_sets_the_default_gate_and_alpha(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    keys = list(STABLE)
    base, results = _write(
        tmp_path, sampled(STABLE), f.run([ran(k, 0 if k == keys[0] else 1) for k in keys])
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "evalctl.toml").write_text('compare_gate = "strict"\ncompare_alpha = 0.01\n')
    data = json.loads(run_cli(capsys, "compare", base, results, "--json").out)
    assert (data["gate"], data["exit_code"]) == ("strict", 1)
    flag = json.loads(
        run_cli(capsys, "compare", "--gate", "statistical", base, results, "--json").out
    )
    assert (flag["gate"], flag["alpha"], flag["exit_code"]) == ("statistical", 0.01, 0)

    (tmp_path / "evalctl.toml").write_text('compare_gate = "lenient"\n')
    refused = run_cli(capsys, "compare", base, results)
    assert refused.code == 2 and "compare_gate" in refused.err


def _retrieval_case(key: str, status: CaseStatus, *, turns: int) -> CaseResult:
    """A case scored on one tool call; `turns=0`: no model asked for it (a retrieval case)."""
    made = f.case(key, status, turns=turns, failed_checks=("ordered",) if status == "fail" else ())
    call = ToolCallRecord(
        turn=0, name="search", arguments={"query": "q"}, result="[]", duration_ms=1
    )
    return made.model_copy(
        update={
            "tool_calls": [call],
            "attempts": [Attempt(status=status, latency_ms=1.0, turns=turns)],
        }
    )


def _from_before_driven_by(tmp_path: Path, run: RunResult) -> RunResult:
    """`run` written as a results file from before cases recorded `driven_by`, read back:
    the reader upgrades it (evalctl.results.versions)."""
    data = json.loads(write_run(run, tmp_path).read_text())
    for case in data["cases"]:
        del case["driven_by"]
    return read_run(f.write_json(tmp_path / "old.json", data))


def test_a_model_free_case_gates_on_one_flip_where_a_model_answer_is_noise(
    tmp_path: Path,
) -> None:
    # One-sample baseline, one flip: for a model's answer that is within sampling noise, but
    # a retrieval case's tool gives the same rows every time, so the flip is a real change.
    # The files are from before `driven_by` was recorded: a case that took no model turn yet
    # called tools is read as driven by its tools.
    base = f.baseline({"r/berry": "pass", "r/mineral": "pass"})
    for turns, expected in ((0, "regression"), (1, "unchanged")):
        run = _from_before_driven_by(
            tmp_path,
            f.run(
                [
                    _retrieval_case("r/berry", "fail", turns=turns),
                    _retrieval_case("r/mineral", "pass", turns=turns),
                ]
            ),
        )
        assert {c.driven_by for c in run.cases} == {"tools" if turns == 0 else "model"}
        cmp = compare_baseline(base, run, rule=rule_named("statistical", base, run))
        changes = {c.key: "regression" for c in cmp.regressions}
        assert changes.get("r/berry", "unchanged") == expected, turns
        assert cmp.exit_code == (ExitCode.GATE_FAILED if turns == 0 else ExitCode.OK)
