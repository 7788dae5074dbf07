"""The metric gates (`[suite.gate]`, evalctl.baselines.metrics): per case on the cases both
sides hold, a one-sided prediction bound whose false-alarm rate is measured here by
simulation, and baselines that keep each case's figures through a narrowed re-record. Runs
and baselines are built by hand: no model, nothing timed."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from evalctl.baselines.comparison import MetricReport
from evalctl.baselines.gate import compare_baseline
from evalctl.baselines.metrics import (
    DEFAULT_METRIC_ALPHA,
    baseline_figure,
    metric_reports,
    prediction_limit,
)
from evalctl.baselines.model import Baseline, CaseMetrics, SuiteMetrics, read_baseline
from evalctl.baselines.write import build_baseline, merge_baseline, write_baseline
from evalctl.chat import Usage
from evalctl.errors import BadInputError, ExitCode
from evalctl.results.io import write_run
from evalctl.results.models import Attempt, CaseResult, RunResult, SuiteGate
from evalctl.stats import t_cdf, t_quantile
from tests import factories as f
from tests.cli_helpers import run_cli

K = 5
SHORT = ("s/short-1", "s/short-2", "s/short-3")
LONG = ("s/long-1", "s/long-2")
# A case's typical output tokens: the short cases answer in a few words, the long ones at
# length, so the suite's mean over all of them is far from either's.
TYPICAL = {**dict.fromkeys(SHORT, 12.0), **dict.fromkeys(LONG, 240.0)}


def _case(key: str, tokens: list[int], latency: list[float] | None = None) -> CaseResult:
    """A scored case with one attempt per sample."""
    case = f.case(key, "pass", output_tokens=tokens[-1])
    latency = latency or [100.0] * len(tokens)
    case.attempts = [
        Attempt(status="pass", latency_ms=ms, usage=Usage(output_tokens=n))
        for n, ms in zip(tokens, latency, strict=True)
    ]
    return case


def _draws(rng: random.Random, key: str, samples: int, scale: float = 1.0) -> list[int]:
    """`samples` answers' output tokens for `key`: its typical length, varying by ~10%."""
    return [round(TYPICAL[key] * scale * math.exp(rng.gauss(0, 0.1))) for _ in range(samples)]


def _run(cases: list[CaseResult], *, case_glob: str | None = None, **gates: float) -> RunResult:
    run = f.run(cases, case_glob=case_glob)
    run.settings.gates = {"s": SuiteGate(**gates)}
    return run


def _recorded(seed: int = 0) -> Baseline:
    """A K-sample baseline of the whole suite, built as `evalctl baseline` builds it."""
    rng = random.Random(seed)
    return build_baseline(_run([_case(k, _draws(rng, k, K)) for k in TYPICAL]), 0.0)


def _tokens(metrics: dict[str, list[MetricReport]]) -> MetricReport:
    (report,) = [m for m in metrics["s"] if m.metric == "tokens_out"]
    return report


# ------------------------------------------------------------------ the statistics


def test_t_quantiles_match_the_tables() -> None:
    # Student's t quantiles as printed in every table (and by scipy.stats.t.ppf).
    for p, df, expected in (
        (0.95, 4, 2.131847),
        (0.99, 3, 4.540703),
        (0.975, 1, 12.706205),
        (0.995, 2, 9.924843),
        (0.9, 10, 1.372184),
        (0.999, 4, 7.173182),
        (0.95, 1000, 1.646379),
    ):
        assert t_quantile(p, df) == pytest.approx(expected, abs=1e-5)
        assert t_cdf(expected, df) == pytest.approx(p, abs=1e-6)
    assert t_quantile(0.05, 4) == pytest.approx(-2.131847, abs=1e-5)
    with pytest.raises(ValueError):
        t_quantile(1.0, 3)


def test_the_limit_is_a_prediction_bound_and_the_tolerance_raises_it() -> None:
    before = [10.0, 12.0, 11.0, 9.0, 13.0]
    logs = [math.log(v) for v in before]
    mean = sum(logs) / K
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (K - 1))
    bound = math.exp(mean + t_quantile(0.99, K - 1) * sd * math.sqrt(1 / K + 1))
    assert prediction_limit(before, 1, 0.0, 0.01) == pytest.approx(bound)
    assert prediction_limit(before, 1, 0.25, 0.01) == pytest.approx(bound * 1.25)
    # More run samples narrow it; a larger alpha lowers it.
    assert prediction_limit(before, 3, 0.0, 0.01) < bound
    assert prediction_limit(before, 1, 0.0, 0.05) < bound
    # No spread (one sample, or K equal figures): the mean, raised by the tolerance.
    assert prediction_limit([10.0], 1, 0.25, 0.01) == 12.5
    assert prediction_limit([10.0] * K, 1, 0.0, 0.01) == 10.0
    # A figure of 0 (no tokens): the same bound on the figures themselves.
    linear = prediction_limit([0.0, 2.0, 1.0, 1.0, 1.0], 1, 0.0, 0.01)
    assert linear == pytest.approx(1.0 + t_quantile(0.99, 4) * math.sqrt(0.5) * math.sqrt(1.2))


def _simulated_comparison(
    rng: random.Random, run: RunResult, alpha: float, scale: float = 1.0
) -> set[str]:
    """One draw: a suite of 8 cases of random typical sizes (10 to 400 tokens), a K-sample
    baseline and a one-sample run from the same distributions (each answer's tokens and
    latency vary by a lognormal factor, sigma 0.3 and 0.2), the run's tokens `scale` times
    larger; which metrics failed, three gated at tolerance 0, where the bound alone decides."""
    sizes = {f"s/c{i}": rng.uniform(10, 400) for i in range(8)}

    def answer(size: float, factor: float = 1.0) -> tuple[int, float]:
        tokens = max(1, round(size * factor * math.exp(rng.gauss(0, 0.3))))
        return tokens, 30 * size * math.exp(rng.gauss(0, 0.2))

    recorded = {}
    for key, size in sizes.items():
        answers = [answer(size) for _ in range(K)]
        recorded[key] = CaseMetrics(
            output_tokens=[t for t, _ in answers], latency_ms=[ms for _, ms in answers]
        )
    baseline = Baseline(
        provider="scripted",
        model="script",
        baselines=dict.fromkeys(sizes, "pass"),
        case_metrics=recorded,
    )
    run.cases = []
    for key, size in sizes.items():
        tokens, ms = answer(size, scale)
        run.cases.append(f.case(key, "pass", latency_ms=ms, output_tokens=tokens))
    _, exceeded = metric_reports(baseline, run, None, alpha)
    return {change.metric for change in exceeded}


def test_the_false_alarm_rate_is_at_most_alpha_by_simulation() -> None:
    # Nothing changed: the chance that any of the three metric gates fails is at most alpha
    # (each gets alpha/3), up to the simulation's error: 2,000 draws, a standard error of
    # 0.5%. Measured here: 5.95% (tokens 1.85%, p50 2.15%, p95 2.1%; docs/gating.md).
    alpha = 0.05
    rng = random.Random(11)
    run = _run([], tokens_out=0.0, latency_p50=0.0, latency_p95=0.0)
    draws = [_simulated_comparison(rng, run, alpha) for _ in range(2000)]
    assert sum(bool(d) for d in draws) / len(draws) <= alpha + 0.015
    for metric in ("tokens_out", "latency_p50", "latency_p95"):
        assert sum(metric in d for d in draws) / len(draws) <= alpha / 3 + 0.01
    # And it is no dead gate: twice the tokens is caught in most runs of these noisy suites.
    caught = [_simulated_comparison(rng, run, alpha, 2.0) for _ in range(100)]
    assert sum("tokens_out" in d for d in caught) >= 80


def test_alpha_is_split_over_the_gated_metrics_and_checked() -> None:
    baseline = _recorded()
    rng = random.Random(1)
    run = _run([_case(k, _draws(rng, k, 1)) for k in TYPICAL], tokens_out=0.25, cost=0.1)
    reports, _ = metric_reports(baseline, run)
    gated = {r.metric: r.alpha for r in reports["s"] if r.limit is not None}
    # cost is asked for but the scripted provider has none to compare: it still takes a share.
    assert gated == {"tokens_out": DEFAULT_METRIC_ALPHA / 2}
    assert "(alpha 0.005)" in baseline_figure(reports["s"][0])
    with pytest.raises(BadInputError, match="alpha"):
        metric_reports(baseline, run, alpha=1.0)


# ------------------------------------------------------------------ the cases both hold


def test_a_narrowed_unchanged_run_does_not_gate() -> None:
    # The long cases alone, run again as they were: their figures are held to the
    # baseline's figures for the long cases (under the whole suite's mean, ~100 tokens, this
    # run of ~240 failed).
    baseline = _recorded()
    assert len(baseline.case_metrics) == len(TYPICAL)
    rng = random.Random(2)
    run = _run([_case(k, _draws(rng, k, 1)) for k in LONG], case_glob="long-*", tokens_out=0.25)
    cmp = compare_baseline(baseline, run)
    assert cmp.metric_regressions == []
    assert cmp.exit_code == ExitCode.OK
    report = _tokens(cmp.metrics)
    assert report.cases == len(LONG)
    assert report.baseline_mean == pytest.approx(240, rel=0.1)


def test_a_blow_up_of_the_short_cases_is_caught() -> None:
    # The short cases answer at twice their length: against the whole suite's mean (~100)
    # their ~24 tokens passed; against their own (~12) they fail.
    baseline = _recorded()
    rng = random.Random(3)
    run = _run(
        [_case(k, _draws(rng, k, 1, scale=2.0)) for k in SHORT],
        case_glob="short-*",
        tokens_out=0.25,
    )
    cmp = compare_baseline(baseline, run)
    (change,) = cmp.metric_regressions
    assert (change.key, change.metric) == ("s", "tokens_out")
    # The limit follows the short cases' own figures (~12 tokens), far below the suite's ~100.
    assert change.run > change.limit and change.limit < 25
    assert cmp.exit_code == ExitCode.GATE_FAILED
    # The same cases unchanged pass.
    run = _run([_case(k, _draws(rng, k, 1)) for k in SHORT], case_glob="short-*", tokens_out=0.25)
    assert compare_baseline(baseline, run).metric_regressions == []


def test_new_cases_and_confirmation_samples_are_left_out_of_the_figures() -> None:
    baseline = _recorded()
    rng = random.Random(4)
    cases = [_case(k, _draws(rng, k, 1)) for k in TYPICAL]
    cases.append(_case("s/new-and-long", [5000]))
    # A case re-sampled to confirm a drop (`run --baseline`): its extra samples are no
    # samples of the run, and would put a second figure over one case alone.
    cases[0].attempts.append(
        Attempt(status="fail", latency_ms=1.0, usage=Usage(output_tokens=9000), confirmation=True)
    )
    cmp = compare_baseline(baseline, _run(cases, tokens_out=0.25))
    assert cmp.metric_regressions == []
    assert _tokens(cmp.metrics).cases == len(TYPICAL)
    assert _tokens(cmp.metrics).run == pytest.approx(100, rel=0.15)


def _narrowed_rerecord(existing: Baseline, scale: float) -> tuple[Baseline, RunResult]:
    rng = random.Random(5)
    narrowed = _run([_case(k, _draws(rng, k, K, scale=scale)) for k in SHORT], case_glob="short-*")
    return build_baseline(narrowed, 0.0), narrowed


def test_a_narrowed_re_record_keeps_the_other_cases_metrics() -> None:
    existing = _recorded()
    # The short cases now answer at twice their length, on purpose, and are re-recorded.
    fresh, narrowed = _narrowed_rerecord(existing, 2.0)
    merged, kept = merge_baseline(existing, fresh, narrowed)
    assert kept == len(LONG)
    for key in LONG:
        assert merged.case_metrics[key] == existing.case_metrics[key]
    for key in SHORT:
        assert merged.case_metrics[key] == fresh.case_metrics[key]
    # The suite's figures are drawn again over all five cases, not the three re-recorded.
    tokens = merged.metrics["s"].output_tokens
    assert len(tokens) == K
    expected = [
        sum(merged.case_metrics[k].output_tokens[r] for k in TYPICAL) / len(TYPICAL)
        for r in range(K)
    ]
    assert tokens == pytest.approx(expected, abs=0.01)
    # A full run at the new lengths gates clean against the merged baseline; against the
    # short cases' figures alone (what the merge used to keep for the suite) it failed.
    rng = random.Random(6)
    full = _run(
        [_case(k, _draws(rng, k, 1, scale=2.0 if k in SHORT else 1.0)) for k in TYPICAL],
        tokens_out=0.25,
    )
    assert compare_baseline(merged, full).metric_regressions == []
    only_short = merged.model_copy(update={"case_metrics": {}, "metrics": fresh.metrics})
    assert [c.metric for c in compare_baseline(only_short, full).metric_regressions] == [
        "tokens_out"
    ]


def test_cli_baseline_from_a_narrowed_run_merges_the_case_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    existing = _recorded()
    path = write_baseline(existing, tmp_path / "baselines" / "scripted.json")
    _, narrowed = _narrowed_rerecord(existing, 2.0)
    results = write_run(narrowed, tmp_path / "narrowed")
    done = run_cli(capsys, "baseline", "--from", str(results), "--out", str(path), "--json")
    assert done.code == 0, done.err
    merged = read_baseline(path)
    assert {k: merged.case_metrics[k] for k in LONG} == {k: existing.case_metrics[k] for k in LONG}
    assert (
        merged.case_metrics["s/short-1"].output_tokens
        != existing.case_metrics["s/short-1"].output_tokens
    )
    data = json.loads(path.read_text())
    assert set(data["case_metrics"]) == set(TYPICAL)


# ------------------------------------------------------------------ older baselines


def _suite_wide(values: list[float]) -> Baseline:
    return Baseline(
        provider="scripted",
        model="script",
        baselines=dict.fromkeys(TYPICAL, "pass"),
        metrics={
            "s": SuiteMetrics(
                output_tokens=values,
                latency_p50_ms=[100.0] * len(values),
                latency_p95_ms=[100.0] * len(values),
            )
        },
    )


def test_a_baseline_with_suite_figures_only_gates_a_full_run_and_notes_a_narrowed_one() -> None:
    old = _suite_wide([100.0, 104.0, 98.0, 101.0, 99.0])
    rng = random.Random(7)
    full = [_case(k, _draws(rng, k, 1)) for k in TYPICAL]
    cmp = compare_baseline(old, _run(full, tokens_out=0.25))
    assert cmp.metric_regressions == []
    assert _tokens(cmp.metrics).limit is not None
    blown = [_case(k, [t * 3 for t in _draws(rng, k, 1)]) for k in TYPICAL]
    cmp = compare_baseline(old, _run(blown, tokens_out=0.25))
    assert [c.metric for c in cmp.metric_regressions] == ["tokens_out"]
    # Narrowed: the baseline's figure is over cases the run does not hold, so it is shown
    # with a note and never gates, whatever the run's value.
    long_only = [c for c in blown if c.key in LONG]
    cmp = compare_baseline(old, _run(long_only, case_glob="long-*", tokens_out=0.25))
    assert cmp.metric_regressions == [] and cmp.exit_code == ExitCode.OK
    report = _tokens(cmp.metrics)
    assert report.limit is None
    assert "not gated" in baseline_figure(report)


def test_case_metrics_need_schema_3_and_one_value_per_sample() -> None:
    with pytest.raises(ValueError, match="one value per sample"):
        CaseMetrics(output_tokens=[1, 2], latency_ms=[1.0])
    data = _recorded().model_dump(mode="json")
    assert "case_metrics" in data
    data["schema_version"] = 2
    for field in ("check_counts", "sampling", "platform", "metrics"):
        data.pop(field, None)
    with pytest.raises(ValueError, match="case_metrics needs schema_version 3"):
        Baseline.model_validate(data)
