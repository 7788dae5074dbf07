"""Summary figures on hand-computed examples."""

from __future__ import annotations

import random
import statistics

import pytest

from evalctl.chat import Usage
from evalctl.config import ModelPrice
from evalctl.results.summary import latency_stats, percentile, summarize
from tests import factories as f


@pytest.mark.parametrize(
    ("p", "expected"),
    [(0, 1.0), (50, 5.5), (95, 9.55), (99, 9.91), (100, 10.0), (25, 3.25)],
)
def test_percentile_on_one_to_ten(p: float, expected: float) -> None:
    # Rank r = p/100 * (n-1); e.g. p95: r = 8.55 -> 9 + 0.55 * (10 - 9) = 9.55.
    values = [7.0, 1.0, 10.0, 3.0, 5.0, 2.0, 9.0, 4.0, 8.0, 6.0]  # order must not matter
    assert percentile(values, p) == pytest.approx(expected)


def test_percentile_edge_cases() -> None:
    assert percentile([], 50) == 0.0
    assert percentile([42.0], 99) == 42.0
    assert percentile([100.0, 200.0], 50) == 150.0
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_percentile_agrees_with_the_inclusive_method_of_statistics() -> None:
    # An independent oracle: statistics.quantiles(method="inclusive") is the same definition.
    rng = random.Random(7)
    values = [rng.uniform(10, 5000) for _ in range(37)]
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    for p in (50, 95, 99):
        assert percentile(values, p) == pytest.approx(cuts[p - 1])


def test_latency_stats() -> None:
    stats = latency_stats([100.0, 200.0, 300.0, 400.0])
    assert (stats.p50, stats.mean) == (250.0, 250.0)
    assert stats.p99 == pytest.approx(397.0)


def test_counts_and_rates_over_scored_cases() -> None:
    cases = [
        f.case("s/a", "pass"),
        f.case("s/b", "pass", first_try=False),
        f.case("s/c", "fail"),
        f.case("s/d", "flaky"),
        f.case("s/e", "error"),
        f.case("s/f", "skipped"),
    ]
    s = summarize(cases, "scripted")
    assert (s.total, s.passed, s.failed, s.flaky, s.errors, s.skipped) == (6, 2, 1, 1, 1, 1)
    # Scored = pass + fail + flaky = 4; error and skipped are neither.
    assert s.pass_rate == pytest.approx(2 / 4)
    assert s.first_try_rate == pytest.approx(1 / 4)


def test_latency_and_turns_ignore_errored_and_skipped_cases() -> None:
    cases = [
        f.case("s/a", "pass", latency_ms=100, turns=1),
        f.case("s/b", "fail", latency_ms=300, turns=3),
        # A timeout's latency is the timeout, not the feature's speed.
        f.case("s/c", "error", latency_ms=120_000, turns=9),
        f.case("s/d", "skipped", latency_ms=0, turns=0),
    ]
    s = summarize(cases, "scripted")
    assert s.latency_ms.p99 == pytest.approx(298.0)
    assert s.latency_ms.p50 == 200.0
    assert s.turns_mean == 2.0


def test_usage_totals_include_errored_cases() -> None:
    cases = [
        f.case("s/a", "pass", input_tokens=100, output_tokens=10),
        f.case("s/b", "error", input_tokens=50, output_tokens=5),
    ]
    assert summarize(cases, "scripted").usage == Usage(input_tokens=150, output_tokens=15)


def test_tokens_per_s_weights_by_tokens_not_by_case() -> None:
    cases = [
        f.case("s/a", output_tokens=100, tokens_per_s=50.0),  # 2 s of generation
        f.case("s/b", output_tokens=300, tokens_per_s=100.0),  # 3 s
        f.case("s/c", output_tokens=999),  # no speed reported: left out
    ]
    # 400 tokens in 5 s; the naive mean of rates would say 75.
    assert summarize(cases, "local").tokens_per_s == pytest.approx(80.0)
    assert summarize([f.case("s/a", output_tokens=5)], "local").tokens_per_s is None


def test_nothing_scored() -> None:
    s = summarize([f.case("s/a", "skipped")], "scripted")
    assert s.pass_rate is None and s.first_try_rate is None
    assert s.latency_ms.p50 == 0.0
    assert summarize([], "scripted").total == 0


def test_cost_only_for_billed_providers_with_a_known_model() -> None:
    cases = [f.case("s/a", input_tokens=1_000_000, output_tokens=1_000_000)]
    prices = {"my-model": ModelPrice(input_per_mtok=2.0, output_per_mtok=10.0)}
    assert summarize(cases, "anthropic", model="my-model", prices=prices).estimated_cost_usd == 12.0
    assert summarize(cases, "anthropic", model="unknown-model").estimated_cost_usd is None
    assert summarize(cases, "local", model="my-model", prices=prices).estimated_cost_usd is None
    assert summarize(cases, "anthropic").estimated_cost_usd is None
