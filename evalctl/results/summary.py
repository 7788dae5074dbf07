"""The run summary: counts, rates, latency percentiles, turns, tokens.

Definitions (each chosen so one bad case cannot make the numbers lie):
- *scored* cases are those with status pass, fail or flaky. `error` (infrastructure) and
  `skipped` (a prerequisite missing) are neither passes nor failures.
- `pass_rate` = passed / scored; a flaky case counts as scored but not passed.
- check counts are over the scored cases' checks; `n/a` (the check had nothing to test) is
  neither a pass nor a failure and is counted apart.
- `first_try_rate` = scored cases that passed with no repair turn / scored.
- latency percentiles and `turns_mean` are over scored cases: an errored case's latency is
  a timeout or a crash, not the feature's speed.
- `usage` totals every case, errored ones included: those tokens were spent.
- `tokens_per_s` aggregates the cases that report a generation speed as total output tokens
  over total generation time (sum of tokens_i / speed_i), which weights long answers by
  their length instead of averaging rates; None when no case reports a speed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from evalctl.chat import Usage
from evalctl.config import ModelPrice
from evalctl.cost import estimate_cost, price_for, price_table
from evalctl.providers.registry import traits
from evalctl.results.models import SCORED, CaseResult, LatencyStats, Summary


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100) by linear interpolation between closest ranks.

    This is the "inclusive" method (numpy's default, Excel's PERCENTILE.INC): with values
    sorted as x[0..n-1], the rank is r = p/100 * (n-1) and the result interpolates between
    x[floor(r)] and x[ceil(r)]. It never invents a value outside the observed range, and for
    p50 it is the usual median. Returns 0.0 for no values.
    """
    if not 0 <= p <= 100:
        raise ValueError(f"percentile must be within 0..100, got {p}")
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = p / 100 * (len(ordered) - 1)
    low = math.floor(rank)
    high = math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def latency_stats(values: Sequence[float]) -> LatencyStats:
    if not values:
        return LatencyStats()
    return LatencyStats(
        p50=percentile(values, 50),
        p95=percentile(values, 95),
        p99=percentile(values, 99),
        mean=sum(values) / len(values),
    )


def summarize(
    cases: list[CaseResult],
    provider_name: str,
    *,
    model: str | None = None,
    prices: Mapping[str, ModelPrice] | None = None,
) -> Summary:
    """Summarise `cases`. With `model`, billed providers get a cost estimate from the default
    price table overlaid by `prices` (settings.prices); local and scripted runs get None."""
    counts = {status: 0 for status in ("pass", "fail", "error", "skipped", "flaky")}
    for case in cases:
        counts[case.status] += 1
    scored = [c for c in cases if c.status in SCORED]

    usage = Usage()
    for case in cases:
        usage = usage + case.usage

    cost = None
    if model is not None and traits(provider_name).billed:
        price = price_for(model, price_table(prices))
        cost = None if price is None else estimate_cost(usage, price)

    return Summary(
        total=len(cases),
        passed=counts["pass"],
        failed=counts["fail"],
        errors=counts["error"],
        skipped=counts["skipped"],
        flaky=counts["flaky"],
        checks_passed=sum(ch.status == "pass" for c in scored for ch in c.checks),
        checks_failed=sum(ch.status == "fail" for c in scored for ch in c.checks),
        checks_na=sum(ch.status == "n/a" for c in scored for ch in c.checks),
        pass_rate=counts["pass"] / len(scored) if scored else None,
        first_try_rate=(
            sum(1 for c in scored if c.status == "pass" and c.first_try) / len(scored)
            if scored
            else None
        ),
        latency_ms=latency_stats([c.latency_ms for c in scored]),
        turns_mean=sum(c.turns for c in scored) / len(scored) if scored else 0.0,
        usage=usage,
        tokens_per_s=_tokens_per_s(cases),
        estimated_cost_usd=cost,
    )


def _tokens_per_s(cases: list[CaseResult]) -> float | None:
    tokens = 0
    seconds = 0.0
    for case in cases:
        speed = case.tokens_per_s
        out = case.usage.output_tokens
        if speed and speed > 0 and out > 0:
            tokens += out
            seconds += out / speed
    return tokens / seconds if seconds > 0 else None
