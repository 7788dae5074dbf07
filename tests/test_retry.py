"""The one RetryPolicy, driven by real SDK errors from the fake server's injected faults."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest

from evalctl.errors import ProviderError, TransientProviderError
from evalctl.fakes.llm_server import FakeLLMServer, Step
from evalctl.providers.base import Provider
from evalctl.retry import RetryPolicy
from tests import cloud_helpers
from tests.cloud_helpers import ask

MAKERS: dict[str, Callable[[FakeLLMServer], Provider]] = {
    "anthropic": cloud_helpers.anthropic,
    "gemini": cloud_helpers.gemini,
}
TRANSIENT_FAULTS = ["rate_limit", "server_error", "overloaded", "unavailable", "drop", "malformed"]


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


class Sleeps:
    """An injected sleep: records the delays instead of waiting them out."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def policy(sleeps: Sleeps, **kwargs: float) -> RetryPolicy:
    return RetryPolicy(sleep=sleeps, rng=random.Random(1), **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("provider_name", MAKERS)
@pytest.mark.parametrize("fault", TRANSIENT_FAULTS)
def test_transient_fault_is_retried_then_passes(
    server: FakeLLMServer, provider_name: str, fault: str
) -> None:
    provider = MAKERS[provider_name](server)
    server.enqueue(Step.failing(fault), Step.reply("recovered"))  # type: ignore[arg-type]
    sleeps = Sleeps()
    reply = policy(sleeps).call(lambda: provider.complete(ask("hi"), timeout=10))
    assert reply.content == "recovered"
    assert len(server.requests) == 2
    assert len(sleeps.delays) == 1
    provider.close()


@pytest.mark.parametrize("provider_name", MAKERS)
def test_slow_reply_past_the_timeout_is_retried(server: FakeLLMServer, provider_name: str) -> None:
    provider = MAKERS[provider_name](server)
    server.enqueue(Step.failing("slow", latency_ms=3000), Step.reply("fast this time"))
    sleeps = Sleeps()
    # The first attempt's 0.4 s is always short of a 3 s reply; the retry gets a timeout
    # no busy machine needs for a reply from 127.0.0.1.
    timeouts = iter([0.4, 60.0])
    reply = policy(sleeps).call(lambda: provider.complete(ask("hi"), timeout=next(timeouts)))
    assert reply.content == "fast this time"
    assert len(sleeps.delays) == 1
    provider.close()


@pytest.mark.parametrize("provider_name", MAKERS)
def test_retry_after_is_honoured(server: FakeLLMServer, provider_name: str) -> None:
    provider = MAKERS[provider_name](server)
    server.enqueue(
        Step.failing("rate_limit", retry_after=3),
        Step.failing("rate_limit", retry_after=0.25),
        Step.reply("ok"),
    )
    sleeps = Sleeps()
    policy(sleeps).call(lambda: provider.complete(ask("hi"), timeout=10))
    # The full retry-after, plus at most a quarter of the base delay of jitter.
    waits = sleeps.delays
    assert len(waits) == 2
    for wait, asked in zip(waits, [3.0, 0.25], strict=True):
        assert asked <= wait <= asked + RetryPolicy().base_delay_s / 4
    provider.close()


@pytest.mark.parametrize("provider_name", MAKERS)
def test_gives_up_after_the_attempt_bound(server: FakeLLMServer, provider_name: str) -> None:
    provider = MAKERS[provider_name](server)
    server.enqueue(*[Step.failing("overloaded")] * 5, Step.reply("too late"))
    sleeps = Sleeps()
    with pytest.raises(TransientProviderError):
        policy(sleeps, max_attempts=4).call(lambda: provider.complete(ask("hi"), timeout=10))
    assert len(server.requests) == 4
    assert len(sleeps.delays) == 3
    provider.close()


@pytest.mark.parametrize("provider_name", MAKERS)
@pytest.mark.parametrize("fault", ["bad_request", "auth"])
def test_permanent_errors_are_not_retried(
    server: FakeLLMServer, provider_name: str, fault: str
) -> None:
    provider = MAKERS[provider_name](server)
    server.enqueue(Step.failing(fault), Step.reply("never reached"))  # type: ignore[arg-type]
    sleeps = Sleeps()
    with pytest.raises(ProviderError) as info:
        policy(sleeps).call(lambda: provider.complete(ask("hi"), timeout=10))
    assert not isinstance(info.value, TransientProviderError)
    assert len(server.requests) == 1
    assert sleeps.delays == []
    provider.close()


def test_total_budget_stops_retrying(server: FakeLLMServer) -> None:
    provider = cloud_helpers.anthropic(server)
    server.enqueue(Step.failing("rate_limit", retry_after=30), Step.reply("ok"))
    sleeps = Sleeps()
    with pytest.raises(TransientProviderError):
        policy(sleeps, max_delay_s=60, total_budget_s=10).call(
            lambda: provider.complete(ask("hi"), timeout=10)
        )
    assert sleeps.delays == []  # waiting 30 s would overshoot the 10 s budget
    provider.close()


def test_backoff_is_exponential_with_full_jitter_and_capped() -> None:
    retry = RetryPolicy(base_delay_s=0.5, max_delay_s=4.0, rng=random.Random(7))
    error = TransientProviderError("x")
    for attempt, ceiling in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (8, 4.0)]:
        delays = [retry.delay_for(attempt, error) for _ in range(200)]
        assert all(0 <= d <= ceiling for d in delays)
        assert max(delays) > ceiling * 0.8  # full jitter spreads over the whole range


def test_on_retry_reports_each_retry() -> None:
    calls: Iterator[TransientProviderError | str] = iter(
        [TransientProviderError("a", retry_after=1), TransientProviderError("b"), "done"]
    )
    seen: list[tuple[int, str]] = []

    def flaky() -> str:
        item = next(calls)
        if isinstance(item, Exception):
            raise item
        return item

    result = policy(Sleeps()).call(flaky, on_retry=lambda n, exc, _d: seen.append((n, str(exc))))
    assert result == "done"
    assert seen == [(1, "a"), (2, "b")]


def test_a_retry_after_past_the_total_budget_gives_up_at_once() -> None:
    sleeps = Sleeps()
    calls = []

    def refuse() -> None:
        calls.append(1)
        raise TransientProviderError("rate limited", retry_after=120)

    with pytest.raises(TransientProviderError):
        policy(sleeps, total_budget_s=30).call(refuse)
    assert calls == [1]
    assert sleeps.delays == []
