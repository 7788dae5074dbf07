"""Time limits that follow the machine: the formula as a pure function, and its wiring with a
provider that reports a fake measured speed. Nothing here depends on this machine's speed:
the provider answers at once, and the tests read the time budget it was handed."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.config import Settings
from evalctl.providers.base import Speed
from evalctl.providers.scripted import ScriptedProvider, load_script
from evalctl.providers.wrapper import ProviderWrapper
from evalctl.retry import RetryPolicy
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from evalctl.runner.timelimit import SAFETY, case_limit, limit_from_speed

SLOW = Speed(gen_tokens_per_s=2.0, prompt_tokens_per_s=20.0, source="fake")


def test_the_limit_follows_the_token_budget_and_the_speed() -> None:
    seconds = limit_from_speed(
        floor_s=120, turns=5, max_tokens=512, prompt_tokens=1000, speed=SLOW, safety=2
    )
    assert seconds == 5 * (512 / 2 + 1000 / 20) * 2


def test_five_times_slower_gets_five_times_the_time() -> None:
    def at(rate: float) -> float:
        speed = Speed(gen_tokens_per_s=rate, prompt_tokens_per_s=rate * 10)
        return limit_from_speed(floor_s=1, turns=3, max_tokens=256, prompt_tokens=600, speed=speed)

    assert at(10.0) == pytest.approx(5 * at(50.0))


def test_a_fast_machine_keeps_the_floor() -> None:
    fast = Speed(gen_tokens_per_s=500.0, prompt_tokens_per_s=5000.0)
    assert (
        limit_from_speed(floor_s=120, turns=5, max_tokens=64, prompt_tokens=100, speed=fast) == 120
    )


def test_a_limit_the_user_set_is_taken_as_given() -> None:
    limit = case_limit(
        explicit_s=30, floor_s=120, turns=5, max_tokens=512, prompt_chars=3000, speed=SLOW
    )
    assert (limit.seconds, limit.explicit) == (30, True)
    assert "as set" in limit.timed_out()


def test_no_measured_speed_means_the_floor() -> None:
    limit = case_limit(
        explicit_s=None, floor_s=120, turns=5, max_tokens=512, prompt_chars=3000, speed=None
    )
    assert limit.seconds == 120 and limit.speed is None


def test_the_timeout_message_names_the_measured_speed() -> None:
    limit = case_limit(
        explicit_s=None, floor_s=1, turns=2, max_tokens=100, prompt_chars=300, speed=SLOW
    )
    assert limit.seconds == 2 * (100 / 2 + 100 / 20) * SAFETY
    message = limit.timed_out(elapsed_s=220)
    assert "220s" in message and "2.0 tok/s" in message and "20.0 tok/s" in message


class _Measured(ProviderWrapper[ScriptedProvider]):
    """A scripted provider that reports a measured speed and the budget each request got;
    `timeout_reply` makes it answer like a daemon whose generation ran out of time."""

    def __init__(self, inner: ScriptedProvider, speed: Speed | None, timeout_reply: bool):
        super().__init__(inner)
        self.speed = speed
        self.timeout_reply = timeout_reply
        self.budgets: list[float] = []

    def measured_speed(self) -> Speed | None:
        return self.speed

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        self.budgets.append(timeout)
        if self.timeout_reply:
            return CompletionResponse(stop_reason="timeout")
        return self.inner.complete(request, timeout=timeout)


def _run(
    echo_suite: Path, tmp_path: Path, speed: Speed | None, *, timeout_reply: bool = False
) -> tuple[_Measured, object]:
    script = tmp_path / "script.toml"
    script.write_text('[[cases."echo/hello"]]\ncontent = "hello"\n')
    provider = _Measured(ScriptedProvider(load_script(script)), speed, timeout_reply)
    request = RunRequest(
        provider="scripted",
        paths=[echo_suite],
        case_glob="hello",
        out_dir=tmp_path / "out",
        show_progress=False,
    )
    retry = RetryPolicy(max_attempts=1, sleep=lambda _s: None)
    outcome = execute_run(request, Settings(), {}, provider_override=provider, retry=retry)
    return provider, outcome.result


def test_a_slow_measured_speed_raises_the_case_budget(echo_suite: Path, tmp_path: Path) -> None:
    # The echo suite: 3 turns (+1 last answer turn) of 512 tokens at 2 tok/s, far over 120 s.
    provider, _ = _run(echo_suite, tmp_path, SLOW)
    assert provider.budgets and provider.budgets[0] > 4 * 512 / 2 * SAFETY - 60


def test_without_a_speed_the_configured_timeout_holds(echo_suite: Path, tmp_path: Path) -> None:
    provider, _ = _run(echo_suite, tmp_path, None)
    assert 0 < provider.budgets[0] <= Settings().case_timeout_s


def test_a_case_that_still_runs_out_is_an_error_naming_the_speed(
    echo_suite: Path, tmp_path: Path
) -> None:
    _, result = _run(echo_suite, tmp_path, SLOW, timeout_reply=True)
    case = result.cases[0]  # type: ignore[attr-defined]
    assert case.status == "error"
    assert "timed out" in case.error and "2.0 tok/s" in case.error
