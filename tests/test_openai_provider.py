"""The openai provider: the real `openai` SDK against the fake server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evalctl.chat import Message, ToolResult
from evalctl.config import Settings
from evalctl.errors import ProviderError, ProviderUnavailableError, TransientProviderError
from evalctl.fakes.llm_server import FAKE_OPENAI_MODEL, FakeLLMServer, Step, ToolCallSpec
from evalctl.providers.openai import parse_arguments
from evalctl.providers.registry import ProviderOptions, create
from tests.cloud_helpers import OPENAI_KEY, TIME, WEATHER, ask, openai

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


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
    provider = openai(server)
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
    assert second.model == "gpt-test"
    # Streamed: the first delta's arrival is the TTFT, within the whole reply's time.
    assert second.timings.ttft_ms is not None
    assert 0 < second.timings.ttft_ms <= second.timings.total_ms

    body = server.requests[-1].body
    assert body["model"] == "gpt-test"
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 0, 512)
    assert body["tool_choice"] == "auto"
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": WEATHER.description,
            "parameters": WEATHER.parameters,
        },
    }
    system, user, assistant, result_1, result_2 = body["messages"]
    assert system == {"role": "system", "content": "You are terse."}
    assert user == {"role": "user", "content": "What is the weather in Paris?"}
    assert (assistant["role"], assistant["content"]) == ("assistant", "")
    assert [c["id"] for c in assistant["tool_calls"]] == [weather.id, clock.id]
    assert assistant["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": '{"city": "Paris"}',
    }
    assert result_1 == {"role": "tool", "tool_call_id": weather.id, "content": "21C"}
    assert result_2 == {"role": "tool", "tool_call_id": clock.id, "content": "no tz"}


def test_headers_key_and_no_sdk_retries(server: FakeLLMServer) -> None:
    server.enqueue(Step.failing("server_error"))
    provider = openai(server)
    with pytest.raises(TransientProviderError):
        provider.complete(ask("hi"), timeout=10)
    # max_retries=0: the SDK made exactly one attempt; the shared RetryPolicy owns retries.
    assert len(server.requests) == 1
    headers = server.requests[0].headers
    assert headers["authorization"] == f"Bearer {OPENAI_KEY}"
    assert headers["x-stainless-retry-count"] == "0"
    assert server.requests[0].path == "/v1/chat/completions"


def test_a_local_server_needs_no_key(server: FakeLLMServer) -> None:
    env = {"OPENAI_BASE_URL": server.env()["OPENAI_BASE_URL"]}
    provider = create("openai", ProviderOptions(settings=Settings(), env=env, model="m"))
    assert provider.complete(ask("hi"), timeout=10).content == "ok"
    assert "authorization" not in server.requests[-1].headers
    provider.close()


def test_without_a_model_the_server_is_asked_which_it_serves(server: FakeLLMServer) -> None:
    provider = openai(server, model=None)
    assert provider.model == FAKE_OPENAI_MODEL
    provider.complete(ask("hi"), timeout=10)
    assert server.requests[-1].body["model"] == FAKE_OPENAI_MODEL
    provider.close()


def test_model_from_settings(server: FakeLLMServer) -> None:
    settings = Settings()
    settings.providers.openai_model = "model-from-config"
    provider = create("openai", ProviderOptions(settings=settings, env=server.env()))
    assert provider.model == "model-from-config"
    provider.close()


def test_tool_choice_mapping(server: FakeLLMServer) -> None:
    provider = openai(server)
    for choice, wire in [
        ("required", "required"),
        ("none", "none"),
        ("get_time", {"type": "function", "function": {"name": "get_time"}}),
    ]:
        provider.complete(ask("hi", tools=[WEATHER, TIME], tool_choice=choice), timeout=10)
        assert server.requests[-1].body["tool_choice"] == wire
    provider.complete(ask("hi"), timeout=10)
    assert "tools" not in server.requests[-1].body
    assert "tool_choice" not in server.requests[-1].body


def test_json_schema_uses_structured_outputs(server: FakeLLMServer) -> None:
    server.enqueue(Step.reply('{"city": "Paris"}'))
    reply = openai(server).complete(ask("hi", json_schema=SCHEMA), timeout=10)
    assert reply.content == '{"city": "Paris"}'
    fmt = server.requests[-1].body["response_format"]
    assert fmt == {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}}


def test_json_schema_falls_back_to_json_mode_once(server: FakeLLMServer) -> None:
    """A server without structured outputs (llama-cpp-python's: a 500 naming the field) gets
    JSON mode with the schema, on this request and every later one."""
    server.openai_json_schema = False
    server.enqueue(Step.reply('{"city": "Paris"}'), Step.reply('{"city": "Rome"}'))
    provider = openai(server)
    assert provider.complete(ask("hi", json_schema=SCHEMA), timeout=10).content == (
        '{"city": "Paris"}'
    )
    assert provider.complete(ask("again", json_schema=SCHEMA), timeout=10).content == (
        '{"city": "Rome"}'
    )
    formats = [r.body["response_format"]["type"] for r in server.requests]
    assert formats == ["json_schema", "json_object", "json_object"]
    body = server.requests[-1].body
    assert body["response_format"]["schema"] == SCHEMA
    # JSON mode is not enforced everywhere: the schema is also spelt out to the model.
    assert '"city"' in body["messages"][0]["content"]
    assert body["messages"][0]["content"].startswith("You are terse.")


def test_other_errors_do_not_switch_json_mode(server: FakeLLMServer) -> None:
    server.enqueue(Step.failing("bad_request"))
    provider = openai(server)
    with pytest.raises(ProviderError, match="HTTP 400"):
        provider.complete(ask("hi", json_schema=SCHEMA), timeout=10)
    provider.complete(ask("hi", json_schema=SCHEMA), timeout=10)
    assert server.requests[-1].body["response_format"]["type"] == "json_schema"


def test_a_stream_without_usage_is_asked_again_unstreamed(server: FakeLLMServer) -> None:
    server.openai_stream_usage = False
    server.enqueue(
        Step.reply("streamed", output_tokens=3),
        Step.reply("plain", input_tokens=11, output_tokens=2),
        Step.reply("plain again", output_tokens=4),
    )
    provider = openai(server)
    reply = provider.complete(ask("hi"), timeout=10)
    assert (reply.content, reply.usage.input_tokens, reply.usage.output_tokens) == ("plain", 11, 2)
    assert reply.timings.ttft_ms is None
    assert provider.complete(ask("hi"), timeout=10).usage.output_tokens == 4
    assert [r.body.get("stream") for r in server.requests] == [True, None, None]


def test_max_tokens_stop_reason(server: FakeLLMServer) -> None:
    server.enqueue(Step.reply("cut", stop_reason="max_tokens"))
    reply = openai(server).complete(ask("hi", max_tokens=3), timeout=10)
    assert reply.stop_reason == "max_tokens"
    assert server.requests[-1].body["max_tokens"] == 3


@pytest.mark.parametrize(
    ("fault", "transient", "status"),
    [
        ("rate_limit", True, "429"),
        ("server_error", True, "500"),
        ("overloaded", True, "503"),
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
        openai(server).complete(ask("hi"), timeout=10)
    assert isinstance(info.value, TransientProviderError) is transient
    assert f"HTTP {status}" in str(info.value)
    if fault == "rate_limit":
        assert isinstance(info.value, TransientProviderError)
        assert info.value.retry_after == 2.5
    if fault == "auth":
        assert "OPENAI_API_KEY" in (info.value.hint or "")


@pytest.mark.parametrize("streamed", [True, False])
@pytest.mark.parametrize(
    ("fault", "words"), [("drop", "connection"), ("malformed", "malformed"), ("slow", "no reply")]
)
def test_transport_faults_are_transient(
    server: FakeLLMServer, fault: str, words: str, streamed: bool
) -> None:
    provider = openai(server)
    if not streamed:
        server.openai_stream_usage = False
        provider.complete(ask("learn"), timeout=10)  # the provider stops streaming
        server.clear_requests()
    latency = 3000 if fault == "slow" else None
    server.enqueue(Step.failing(fault, latency_ms=latency))  # type: ignore[arg-type]
    with pytest.raises(TransientProviderError) as info:
        provider.complete(ask("hi"), timeout=0.5)
    assert words in str(info.value)
    assert bool(server.requests[-1].body.get("stream")) is streamed
    # Nothing from the SDK is chained on: its request object carries the key.
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_echoed_key_is_redacted(server: FakeLLMServer) -> None:
    server.enqueue(Step.failing("auth"))
    with pytest.raises(ProviderError) as info:
        openai(server).complete(ask("hi"), timeout=10)
    text = f"{info.value} {info.value.hint} {info.value!r}"
    assert "invalid API key" in text
    assert OPENAI_KEY not in text
    assert "[REDACTED" in text
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_create_needs_a_base_url_or_a_key() -> None:
    with pytest.raises(ProviderUnavailableError, match="OPENAI_BASE_URL"):
        create("openai", ProviderOptions(settings=Settings(), env={}))


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [
        ('{"city": "Paris"}', {"city": "Paris"}),
        ('```json\n{"city": "Paris"}\n```', {"city": "Paris"}),
        ("", {}),
        ("[1, 2]", {}),
        ("not json", {}),
    ],
)
def test_tool_arguments_are_parsed_tolerantly(raw: str, parsed: dict[str, str]) -> None:
    assert parse_arguments(raw) == parsed
