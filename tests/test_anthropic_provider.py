"""The anthropic provider: the real `anthropic` SDK against the fake server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evalctl.chat import Message, ToolResult
from evalctl.config import Settings
from evalctl.errors import ProviderError, ProviderUnavailableError, TransientProviderError
from evalctl.fakes.llm_server import FakeLLMServer, Step, ToolCallSpec
from evalctl.providers.registry import ProviderOptions, create
from tests.cloud_helpers import ANTHROPIC_KEY, TIME, WEATHER, anthropic, ask


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def test_two_turn_tool_conversation_round_trips_tool_results(server: FakeLLMServer) -> None:
    server.add_conversation(
        "weather in Paris",
        Step(
            tool_calls=[
                ToolCallSpec(name="get_weather", arguments={"city": "Paris"}),
                ToolCallSpec(name="get_time", arguments={"city": "Paris"}),
            ]
        ),
        Step.reply("Sunny, 21 C, noon.", input_tokens=120, output_tokens=9),
    )
    provider = anthropic(server)
    request = ask("What is the weather in Paris?", tools=[WEATHER, TIME])

    first = provider.complete(request, timeout=10)
    assert first.stop_reason == "tool_use"
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"city": "Paris"}),
    ]
    weather, clock = first.tool_calls
    messages = [
        *request.messages,
        first.as_message(),
        Message.tool_result(ToolResult(tool_call_id=weather.id, name=weather.name, content="21C")),
        Message.tool_result(
            ToolResult(tool_call_id=clock.id, name=clock.name, content="no tz", is_error=True)
        ),
    ]
    second = provider.complete(request.model_copy(update={"messages": messages}), timeout=10)
    assert (second.content, second.stop_reason) == ("Sunny, 21 C, noon.", "end_turn")
    assert (second.usage.input_tokens, second.usage.output_tokens) == (120, 9)
    assert second.model == "claude-test"
    assert second.timings.total_ms > 0

    body = server.requests[-1].body
    assert body["system"] == "You are terse."
    assert body["model"] == "claude-test"
    assert body["tool_choice"] == {"type": "auto"}
    assert body["tools"][0] == {
        "name": "get_weather",
        "description": WEATHER.description,
        "input_schema": WEATHER.parameters,
    }
    # Sampling parameters are not sent: API 2026-10-21 rejects them.
    assert "temperature" not in body and "seed" not in body
    user, assistant, results = body["messages"]
    assert user == {"role": "user", "content": "What is the weather in Paris?"}
    assert assistant["role"] == "assistant"
    assert [b["type"] for b in assistant["content"]] == ["tool_use", "tool_use"]
    assert assistant["content"][0]["id"] == weather.id
    assert assistant["content"][0]["input"] == {"city": "Paris"}
    # Both results in ONE user message, each keyed by its tool_use id.
    assert results == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": weather.id, "content": "21C"},
            {"type": "tool_result", "tool_use_id": clock.id, "content": "no tz", "is_error": True},
        ],
    }


def test_headers_key_and_no_sdk_retries(server: FakeLLMServer) -> None:
    server.enqueue(Step.failing("server_error"))
    provider = anthropic(server)
    with pytest.raises(TransientProviderError):
        provider.complete(ask("hi"), timeout=10)
    # max_retries=0: the SDK made exactly one attempt; the shared RetryPolicy owns retries.
    assert len(server.requests) == 1
    headers = server.requests[0].headers
    assert headers["authorization"] == f"Bearer {ANTHROPIC_KEY}"
    assert headers["anthropic-version"]
    assert headers["x-stainless-retry-count"] == "0"


def test_tool_choice_mapping(server: FakeLLMServer) -> None:
    provider = anthropic(server)
    for choice, wire in [
        ("required", {"type": "any"}),
        ("none", {"type": "none"}),
        ("get_time", {"type": "tool", "name": "get_time"}),
    ]:
        provider.complete(ask("hi", tools=[WEATHER, TIME], tool_choice=choice), timeout=10)
        assert server.requests[-1].body["tool_choice"] == wire
    provider.complete(ask("hi"), timeout=10)
    assert "tools" not in server.requests[-1].body
    assert "tool_choice" not in server.requests[-1].body


def test_json_schema_uses_structured_outputs(server: FakeLLMServer) -> None:
    server.enqueue(Step.reply('{"city": "Paris"}'))
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    reply = anthropic(server).complete(ask("hi", json_schema=schema), timeout=10)
    assert reply.content == '{"city": "Paris"}'
    fmt = server.requests[-1].body["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    assert fmt["schema"]["properties"] == {"city": {"type": "string"}}
    assert fmt["schema"]["additionalProperties"] is False  # strict, via transform_schema


def test_max_tokens_stop_reason(server: FakeLLMServer) -> None:
    server.enqueue(Step.reply("cut", stop_reason="max_tokens"))
    reply = anthropic(server).complete(ask("hi", max_tokens=3), timeout=10)
    assert reply.stop_reason == "max_tokens"
    assert server.requests[-1].body["max_tokens"] == 3


@pytest.mark.parametrize(
    ("fault", "transient", "status"),
    [
        ("rate_limit", True, "429"),
        ("server_error", True, "500"),
        ("overloaded", True, "529"),
        ("unavailable", True, "503"),
        ("bad_request", False, "400"),
        ("auth", False, "401"),
    ],
)
def test_status_errors_are_classified(
    server: FakeLLMServer, fault: str, transient: bool, status: str
) -> None:
    server.enqueue(Step.failing(fault, retry_after=2.5))  # type: ignore[arg-type]
    with pytest.raises(ProviderError) as info:
        anthropic(server).complete(ask("hi"), timeout=10)
    assert isinstance(info.value, TransientProviderError) is transient
    assert f"HTTP {status}" in str(info.value)
    if fault == "rate_limit":
        assert isinstance(info.value, TransientProviderError)
        assert info.value.retry_after == 2.5
    if fault == "auth":
        assert "ANTHROPIC_API_KEY" in (info.value.hint or "")


@pytest.mark.parametrize(
    ("fault", "words"), [("drop", "connection"), ("malformed", "malformed"), ("slow", "no reply")]
)
def test_transport_faults_are_transient(server: FakeLLMServer, fault: str, words: str) -> None:
    latency = 3000 if fault == "slow" else None
    server.enqueue(Step.failing(fault, latency_ms=latency))  # type: ignore[arg-type]
    with pytest.raises(TransientProviderError) as info:
        anthropic(server).complete(ask("hi"), timeout=0.5)
    assert words in str(info.value)
    # Nothing from the SDK is chained on: its request object carries the key.
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_echoed_key_is_redacted(server: FakeLLMServer) -> None:
    server.enqueue(Step.failing("auth"))
    with pytest.raises(ProviderError) as info:
        anthropic(server).complete(ask("hi"), timeout=10)
    text = f"{info.value} {info.value.hint} {info.value!r}"
    assert "invalid API key" in text
    assert ANTHROPIC_KEY not in text
    assert "[REDACTED" in text
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_create_needs_a_key() -> None:
    with pytest.raises(ProviderUnavailableError, match="ANTHROPIC_API_KEY"):
        create("anthropic", ProviderOptions(settings=Settings(), env={}))


def test_default_model_comes_from_settings(server: FakeLLMServer) -> None:
    settings = Settings()
    settings.providers.anthropic_model = "claude-from-config"
    options = ProviderOptions(settings=settings, env=server.env())
    provider = create("anthropic", options)
    assert provider.model == "claude-from-config"
    provider.complete(ask("hi"), timeout=10)
    assert server.requests[-1].body["model"] == "claude-from-config"
    provider.close()
