"""A run's suite metrics against the baseline's, and the opt-in metric gates (`[suite.gate]`).

Per suite, four metrics: the mean output tokens per scored case, the p50 and p95 of the
scored cases' latency, and the estimated cost (billed providers only). Each is figured once
per sample (sample r of a case is its r-th scored attempt) over a set of cases.

**Over the cases both sides hold.** A baseline keeps each case's figures per sample
(`Baseline.case_metrics`), so the baseline's K figures and the run's are figured over the
same cases: the run's scored cases that the baseline holds. A `--case`-narrowed run is held
to the baseline's figures for those cases, not the whole suite's, and a blow-up of the short
cases is seen against the short cases. A baseline without per-case figures (written before
they were kept) has only the whole suite's (`Baseline.metrics`): it is compared when the run
scored every case of the suite that the baseline holds (the run's figure is then over those
cases), and otherwise reported with a note and never gated.

**The rule**, for each metric a suite gates (`RunSettings.gates`, from `[suite.gate]`): with
the baseline's K per-sample figures x_1..x_K over those cases and the mean ȳ of the run's m
per-sample figures (m = 1 for a plain run), the metric fails when

    ȳ > (1 + tolerance) · exp(mean(log x) + t(1 - alpha_g; K - 1) · sd(log x) · sqrt(1/K + 1/m))

t(q; K - 1) is Student's t quantile, sd the sample standard deviation, and alpha_g = alpha / G:
the `alpha` given to `metric_reports` (`DEFAULT_METRIC_ALPHA`, 0.01) split evenly over the G
metric gates of the comparison (every suite, every gated metric). The exponential is the
one-sided (1 - alpha_g) prediction bound for a new figure: tokens and latency vary by a factor
rather than by a fixed amount, so their logarithms are close to normal, and when nothing
changed and the figures are independent lognormal draws, a run figure exceeds the bound with
probability exactly alpha_g (m = 1). The tolerance only raises the limit, so the chance that any
metric gate of a comparison fails when nothing changed is at most `alpha` (Bonferroni);
tests/test_metric_gates.py measures it by simulation. A figure of 0 in the baseline (no
tokens) puts the same bound on the figures themselves. A baseline of one sample, or of K
equal figures, has no spread: the limit is mean · (1 + tolerance), and for one sample no
error rate can be stated (record the baseline with `--samples`). Only an increase gates:
fewer tokens, less latency or less cost is no regression.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from evalctl.baselines.comparison import MetricChange, MetricReport
from evalctl.baselines.model import Baseline, CaseMetrics, SuiteMetrics
from evalctl.chat import Usage
from evalctl.errors import BadInputError
from evalctl.results.models import SCORED, CaseResult, RunResult, SuiteGate
from evalctl.results.summary import percentile
from evalctl.results.text import plural
from evalctl.stats import t_quantile

# A price for one sample's usage; None where the provider is not billed.
CostOf = Callable[[Usage], float | None]
# The chance, when nothing changed, that any metric gate of a comparison fails.
DEFAULT_METRIC_ALPHA = 0.01


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
    """The baseline's side of a metric: `12.0 ± 1.5 (5 samples, 3 cases)`, its limit if it
    gates, and why it does not where it cannot."""
    if report.baseline_mean is None:
        return report.note or "-"
    text = metric_value(report.metric, report.baseline_mean)
    if report.baseline_sd:
        text += f" ± {metric_value(report.metric, report.baseline_sd)}"
    over = f", {plural(report.cases, 'case')}" if report.cases else ""
    text += f" ({plural(report.baseline_samples, 'sample')}{over})"
    if report.limit is not None:
        text += f"; gates above {metric_value(report.metric, report.limit)}"
        if report.alpha is not None:
            text += f" (alpha {report.alpha:.2g})"
    if report.note:
        text += f"; {report.note}"
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
    """The case's scored attempts in order. A confirmation attempt (drawn only because the
    case dropped) is no sample of the run."""
    return [
        _Sample(a.latency_ms, a.usage)
        for a in case.attempts
        if a.status in SCORED and not a.confirmation
    ]


def case_metrics(case: CaseResult, cost_of: CostOf | None = None) -> CaseMetrics | None:
    """One case's figures per scored sample (None for a case with none); its cost only
    where `cost_of` prices every sample."""
    samples = _samples(case)
    if not samples:
        return None
    priced = [cost_of(s.usage) for s in samples] if cost_of is not None else []
    costs = [c for c in priced if c is not None]
    return CaseMetrics(
        output_tokens=[s.usage.output_tokens for s in samples],
        latency_ms=[s.latency_ms for s in samples],
        cost_usd=costs if costs and len(costs) == len(samples) else None,
    )


def figures(cases: Sequence[CaseMetrics]) -> dict[str, list[float] | None]:
    """Per metric, one figure per sample r over the cases (each case's r-th sample), for
    r below the fewest samples any case has, so that every figure is over every case. Cost
    is None unless every case is priced; every metric is None without cases."""
    if not cases:
        return dict.fromkeys((m.name for m in METRICS), None)
    n = min(len(c.output_tokens) for c in cases)
    latencies = [[c.latency_ms[r] for c in cases] for r in range(n)]
    out: dict[str, list[float] | None] = {
        "tokens_out": [statistics.fmean(c.output_tokens[r] for c in cases) for r in range(n)],
        "latency_p50": [percentile(sample, 50) for sample in latencies],
        "latency_p95": [percentile(sample, 95) for sample in latencies],
    }
    costs = [c.cost_usd for c in cases if c.cost_usd is not None]
    out["cost"] = (
        [sum(cost[r] for cost in costs) for r in range(n)] if len(costs) == len(cases) else None
    )
    return out


def _mean(values: Sequence[float] | None) -> float | None:
    return statistics.fmean(values) if values else None


def _spread(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (0 for one value), in floating point (the
    statistics module's exact fractions are slow and buy nothing here)."""
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return mean, 0.0
    return mean, math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))


def prediction_limit(
    baseline: Sequence[float], run_samples: int, tolerance: float, alpha: float
) -> float:
    """The value above which the mean of `run_samples` run figures fails against the
    baseline's per-sample figures `baseline`: the one-sided (1 - alpha) prediction bound,
    raised by the tolerance. On the log scale where every figure is positive, (1 + tolerance)
    · exp(m + t(1 - alpha; K - 1) · s · sqrt(1/K + 1/run_samples)) with m and s the mean and
    sample standard deviation of the figures' logarithms; else the same bound on the figures
    themselves, mean · (1 + tolerance) + t · s · sqrt(...). One baseline sample, or K equal
    ones, has no spread: the limit is then mean · (1 + tolerance)."""
    mean, sd = _spread(baseline)
    k = len(baseline)
    if k < 2 or max(baseline) == min(baseline):
        return mean * (1 + tolerance)
    t = t_quantile(1 - alpha, k - 1) * math.sqrt(1 / k + 1 / max(1, run_samples))
    if min(baseline) > 0:
        logs = [math.log(v) for v in baseline]
        log_mean, log_sd = _spread(logs)
        return math.exp(log_mean + t * log_sd) * (1 + tolerance)
    return mean * (1 + tolerance) + t * sd


def _baseline_values(recorded: SuiteMetrics | None, metric: Metric) -> list[float] | None:
    if recorded is None:
        return None
    values: list[float] | None = getattr(recorded, metric.baseline_field)
    return list(values) if values else None


@dataclass(frozen=True)
class _Sides:
    """One suite's per-sample figures on each side, over the same cases where `gates`."""

    run: dict[str, list[float] | None]
    baseline: dict[str, list[float] | None]
    cases: int
    note: str | None = None
    gates: bool = True


def _sides(
    suite: str, cases: Sequence[CaseResult], baseline: Baseline, cost_of: CostOf | None
) -> _Sides:
    measured = {c.key: m for c in cases if (m := case_metrics(c, cost_of)) is not None}
    recorded = {k: v for k, v in baseline.case_metrics.items() if k.partition("/")[0] == suite}
    nothing = dict.fromkeys((m.name for m in METRICS), None)
    if recorded:
        common = sorted(set(measured) & set(recorded))
        if not common:
            note = "no case the baseline measured was scored in the run: not compared"
            return _Sides(figures(list(measured.values())), nothing, 0, note, gates=False)
        return _Sides(
            figures([measured[k] for k in common]),
            figures([recorded[k] for k in common]),
            len(common),
        )
    # An older baseline: the whole suite's figures only.
    suite_wide = baseline.metrics.get(suite)
    if suite_wide is None:
        return _Sides(figures(list(measured.values())), nothing, len(measured), gates=False)
    before = {m.name: _baseline_values(suite_wide, m) for m in METRICS}
    held = sorted(k for k in baseline.baselines if k.partition("/")[0] == suite)
    if held and set(held) <= set(measured):
        return _Sides(figures([measured[k] for k in held]), before, len(held))
    scored = len(set(held) & set(measured))
    note = (
        f"not gated: the baseline has this suite's figures over its {len(held)} cases as a "
        f"whole and the run scored {scored} of them; re-record the baseline to compare the "
        "cases both hold"
    )
    return _Sides(figures(list(measured.values())), before, len(measured), note, gates=False)


def metric_reports(
    baseline: Baseline,
    run: RunResult,
    cost_of: CostOf | None = None,
    alpha: float = DEFAULT_METRIC_ALPHA,
) -> tuple[dict[str, list[MetricReport]], list[MetricChange]]:
    """Per suite of the run, every metric against the baseline's over the cases both hold;
    and the gated ones that exceeded their limit. The figures on both sides are `figures`
    over `case_metrics`, as a baseline records them (`write.suite_metrics`). `alpha` is the
    chance, when nothing changed, that any of them does: split evenly over the gated metrics."""
    if not 0.0 < alpha < 1.0:
        raise BadInputError(
            f"the metric gates' alpha must be between 0 and 1 (exclusive), not {alpha}",
            field="alpha",
        )
    by_suite: dict[str, list[CaseResult]] = defaultdict(list)
    for case in run.cases:
        by_suite[case.suite].append(case)
    gated = sum(
        1
        for suite in by_suite
        for metric in METRICS
        if getattr(run.settings.gates.get(suite, SuiteGate()), metric.name) is not None
    )
    share = alpha / max(1, gated)
    reports: dict[str, list[MetricReport]] = {}
    exceeded: list[MetricChange] = []
    for suite, cases in sorted(by_suite.items()):
        sides = _sides(suite, cases, baseline, cost_of)
        gates = run.settings.gates.get(suite, SuiteGate())
        rows = []
        for metric in METRICS:
            report, change = _metric(suite, metric, sides, gates, share)
            rows.append(report)
            if change is not None:
                exceeded.append(change)
        reports[suite] = rows
    return reports, exceeded


def _metric(
    suite: str, metric: Metric, sides: _Sides, gates: SuiteGate, alpha: float
) -> tuple[MetricReport, MetricChange | None]:
    after = sides.run[metric.name]
    value = _mean(after)
    report = MetricReport(metric=metric.name, run=value, cases=sides.cases, note=sides.note)
    before = sides.baseline[metric.name]
    if not before:
        return report, None
    mean, sd = _spread(before)
    tolerance: float | None = getattr(gates, metric.name)
    report = report.model_copy(
        update={"baseline_mean": mean, "baseline_sd": sd, "baseline_samples": len(before)}
    )
    if tolerance is None or not sides.gates:
        return report, None
    limit = prediction_limit(before, len(after or ()), tolerance, alpha)
    stated = alpha if len(before) > 1 else None
    report = report.model_copy(update={"tolerance": tolerance, "limit": limit, "alpha": stated})
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
        alpha=stated,
    )
    return report, change
