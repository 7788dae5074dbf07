"""A run's suite metrics against the baseline's, and the opt-in metric gates (`[suite.gate]`).

Per suite, four metrics: the mean output tokens per scored case, the p50 and p95 of the
scored cases' latency, and the estimated cost (billed providers only). The baseline records
each once per sample (`Baseline.metrics`: K values for a baseline sampled K times); the run's
value is the same figure for each of its samples (sample r of a case is its r-th scored
attempt), averaged over them.

Every metric is reported. A metric gates only in a suite whose run recorded a tolerance for
it (`RunSettings.gates`, from `[suite.gate]`), and then fails when the run's value exceeds

    baseline mean * (1 + tolerance) + 2 * baseline sample standard deviation

(the deviation is 0 for a baseline of one sample). The tolerance states how much worse is
acceptable; the spread term keeps a metric that varies from sample to sample from failing on
its own noise. Only an increase gates: fewer tokens, less latency or less cost is no
regression.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evalctl.baselines.comparison import MetricChange, MetricReport
from evalctl.baselines.model import Baseline, SuiteMetrics
from evalctl.chat import Usage
from evalctl.results.models import CaseResult, RunResult, SuiteGate
from evalctl.results.summary import percentile
from evalctl.results.text import plural

# A price for one sample's usage; None where the provider is not billed.
CostOf = Callable[[Usage], float | None]
SCORED = ("pass", "fail")


@dataclass(frozen=True)
class Metric:
    """One metric: its `SuiteGate` key, its `SuiteMetrics` list, how every renderer labels
    it and formats its figures."""

    name: str
    baseline_field: str
    label: str
    figure: str


METRICS: tuple[Metric, ...] = (
    Metric("tokens_out", "output_tokens", "output tokens / case", "{:.1f}"),
    Metric("latency_p50", "latency_p50_ms", "latency p50", "{:.0f} ms"),
    Metric("latency_p95", "latency_p95_ms", "latency p95", "{:.0f} ms"),
    Metric("cost", "cost_usd", "cost", "${:.4f}"),
)
_BY_NAME = {m.name: m for m in METRICS}


def metric_label(name: str) -> str:
    """`output tokens / case`, `latency p95`, ..."""
    return _BY_NAME[name].label


def metric_value(name: str, value: float | None) -> str:
    """A metric's figure as every renderer shows it: `12.5`, `840 ms`, `$0.0123`, or `-`."""
    return "-" if value is None else _BY_NAME[name].figure.format(value)


def baseline_figure(report: MetricReport) -> str:
    """The baseline's side of a metric: `12.0 ± 1.5 (5 samples)`, and its limit if it gates."""
    if report.baseline_mean is None:
        return "-"
    text = metric_value(report.metric, report.baseline_mean)
    if report.baseline_sd:
        text += f" ± {metric_value(report.metric, report.baseline_sd)}"
    text += f" ({plural(report.baseline_samples, 'sample')})"
    if report.limit is not None:
        text += f"; gates above {metric_value(report.metric, report.limit)}"
    return text


def reported(metrics: dict[str, list[MetricReport]]) -> list[tuple[str, MetricReport]]:
    """(suite, report) for every metric either side measured, for the renderers' tables."""
    return [
        (suite, r)
        for suite, reports in metrics.items()
        for r in reports
        if r.run is not None or r.baseline_mean is not None
    ]


@dataclass(frozen=True)
class _Sample:
    latency_ms: float
    usage: Usage


def _samples(case: CaseResult) -> list[_Sample]:
    """The case's scored attempts in order; a file without attempts gives the case itself."""
    scored = [_Sample(a.latency_ms, a.usage) for a in case.attempts if a.status in SCORED]
    if scored:
        return scored
    if case.status in (*SCORED, "flaky") and not case.attempts:
        return [_Sample(case.latency_ms, case.usage)]
    return []


def run_metrics(cases: Sequence[CaseResult], cost_of: CostOf | None) -> dict[str, float | None]:
    """Each metric of one suite's cases: per run sample, averaged over the samples."""
    by_sample: dict[int, list[_Sample]] = defaultdict(list)
    for case in cases:
        for r, sample in enumerate(_samples(case)):
            by_sample[r].append(sample)
    if not by_sample:
        return dict.fromkeys((m.name for m in METRICS), None)
    per_sample: dict[str, list[float]] = defaultdict(list)
    costs: list[float] = []
    for samples in by_sample.values():
        latencies = [s.latency_ms for s in samples]
        per_sample["tokens_out"].append(statistics.fmean(s.usage.output_tokens for s in samples))
        per_sample["latency_p50"].append(percentile(latencies, 50))
        per_sample["latency_p95"].append(percentile(latencies, 95))
        if cost_of is not None:
            priced = [cost_of(s.usage) for s in samples]
            if all(p is not None for p in priced):
                costs.append(sum(p for p in priced if p is not None))
    values: dict[str, float | None] = {k: statistics.fmean(v) for k, v in per_sample.items()}
    values["cost"] = statistics.fmean(costs) if len(costs) == len(by_sample) else None
    return values


def _spread(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value)."""
    mean = statistics.fmean(values)
    return mean, statistics.stdev(values) if len(values) > 1 else 0.0


def _baseline_values(recorded: SuiteMetrics | None, metric: Metric) -> list[float]:
    if recorded is None:
        return []
    values: list[float] | None = getattr(recorded, metric.baseline_field)
    return list(values or [])


def suite_metrics(
    baseline: Baseline, run: RunResult, cost_of: CostOf | None = None
) -> tuple[dict[str, list[MetricReport]], list[MetricChange]]:
    """Per suite of the run, every metric against the baseline's; and the gated ones that
    exceeded their limit."""
    by_suite: dict[str, list[CaseResult]] = defaultdict(list)
    for case in run.cases:
        by_suite[case.suite].append(case)
    reports: dict[str, list[MetricReport]] = {}
    exceeded: list[MetricChange] = []
    for suite, cases in sorted(by_suite.items()):
        now = run_metrics(cases, cost_of)
        recorded = baseline.metrics.get(suite)
        gates = run.settings.gates.get(suite, SuiteGate())
        rows = []
        for metric in METRICS:
            report, change = _metric(suite, metric, now[metric.name], recorded, gates)
            rows.append(report)
            if change is not None:
                exceeded.append(change)
        reports[suite] = rows
    return reports, exceeded


def _metric(
    suite: str,
    metric: Metric,
    value: float | None,
    recorded: SuiteMetrics | None,
    gates: SuiteGate,
) -> tuple[MetricReport, MetricChange | None]:
    report = MetricReport(metric=metric.name, run=value)
    before = _baseline_values(recorded, metric)
    if not before:
        return report, None
    mean, sd = _spread(before)
    tolerance: float | None = getattr(gates, metric.name)
    report = report.model_copy(
        update={"baseline_mean": mean, "baseline_sd": sd, "baseline_samples": len(before)}
    )
    if tolerance is None:
        return report, None
    limit = mean * (1 + tolerance) + 2 * sd
    report = report.model_copy(update={"tolerance": tolerance, "limit": limit})
    if value is None or value <= limit:
        return report, None
    change = MetricChange(
        key=suite,
        metric=metric.name,
        run=value,
        baseline_mean=mean,
        baseline_sd=sd,
        tolerance=tolerance,
        limit=limit,
    )
    return report, change
