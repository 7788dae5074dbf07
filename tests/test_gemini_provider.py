"""The gemini provider: the real `google-genai` SDK against the fake server on 127.0.0.1."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from evalctl.chat import Message, ToolResult
from evalctl.config import Settings, load_settings
from evalctl.errors import ProviderError, ProviderUnavailableError, TransientProviderError
from evalctl.fakes.llm_server import FakeLLMServer, Step, ToolCallSpec
from evalctl.providers.gemini import SYNTHETIC_ID_PREFIX
from evalctl.providers.registry import ProviderOptions, create
from tests.cloud_helpers import GOOGLE_KEY, TIME, WEATHER, ask, gemini


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def test_two_turn_function_calling_round_trips_responses(server: FakeLLMServer) -> None:
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
    provider = gemini(server)
    request = ask("What is the weather in Paris?", tools=[WEATHER, TIME], seed=7)

    first = provider.complete(request, timeout=10)
    assert first.stop_reason == "tool_use"
    assert [(c.name, c.arguments) for c in first.tool_calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"city": "Paris"}),
    ]
    weather, clock = first.tool_calls
    # The fake (like the real API for most models) sends no ids: the provider makes them up.
    assert weather.id.startswith(SYNTHETIC_ID_PREFIX) and weather.id != clock.id
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

    sent = server.requests[-1]
    assert sent.path == "/v1/models/gemini-test:generateContent" or sent.path.endswith(
        "/models/gemini-test:generateContent"
    )
    body = sent.body
    assert body["systemInstruction"]["parts"] == [{"text": "You are terse."}]
    config = body["generationConfig"]
    assert (config["temperature"], config["seed"], config["maxOutputTokens"]) == (0.0, 7, 512)
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}
    declaration = body["tools"][0]["functionDeclarations"][0]
    assert declaration["name"] == "get_weather"
    assert WEATHER.parameters in declaration.values()  # the JSON schema, passed as is
    user, model, results = body["contents"]
    assert user == {"role": "user", "parts": [{"text": "What is the weather in Paris?"}]}
    assert model["role"] == "model"
    call_part = model["parts"][0]
    # Synthetic ids are not sent back; the thought signature is.
    assert call_part["functionCall"] == {"name": "get_weather", "args": {"city": "Paris"}}
    assert base64.b64decode(call_part["thoughtSignature"]).startswith(b"fake-sig-")
    # Both function responses in ONE user turn.
    assert results == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"output": "21C"}}},
            {"functionResponse": {"name": "get_time", "response": {"error": "no tz"}}},
        ],
    }
    assert sent.headers["x-goog-api-key"] == GOOGLE_KEY


def test_real_function_call_ids_round_trip(server: FakeLLMServer) -> None:
    server.enqueue(Step(tool_calls=[ToolCallSpec(name="get_weather", id="fc-42")]))
    provider = gemini(server)
    request = ask("weather?", tools=[WEATHER])
    first = provider.complete(request, timeout=10)
    assert first.tool_calls[0].id == "fc-42"
    result = ToolResult(tool_call_id="fc-42", name="get_weather", content="ok")
    messages = [*request.messages, first.as_message(), Message.tool_result(result)]
    provider.complete(request.model_copy(update={"messages": messages}), timeout=10)
    contents = server.requests[-1].body["contents"]
    assert contents[1]["parts"][0]["functionCall"]["id"] == "fc-42"
    assert contents[2]["parts"][0]["functionResponse"]["id"] == "fc-42"


def test_tool_choice_mapping(server: FakeLLMServer) -> None:
    provider = gemini(server)
    for choice, wire in [
        ("required", {"mode": "ANY"}),
        ("none", {"mode": "NONE"}),
        ("get_time", {"mode": "ANY", "allowedFunctionNames": ["get_time"]}),
    ]:
        provider.complete(ask("hi", tools=[WEATHER, TIME], tool_choice=choice), timeout=10)
        assert server.requests[-1].body["toolConfig"]["functionCallingConfig"] == wire


def test_json_schema_without_tools_constrains_decoding(server: FakeLLMServer) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    gemini(server).complete(ask("hi", json_schema=schema), timeout=10)
    config = server.requests[-1].body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert schema in config.values()


def test_json_schema_with_tools_goes_into_the_instruction(server: FakeLLMServer) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    gemini(server).complete(ask("hi", json_schema=schema, tools=[WEATHER]), timeout=10)
    body = server.requests[-1].body
    assert "responseMimeType" not in body["generationConfig"]
    instruction = body["systemInstruction"]["parts"][0]["text"]
    assert instruction.startswith("You are terse.") and '"city"' in instruction


def test_max_tokens_finish_reason(server: FakeLLMServer) -> None:
    server.enqueue(Step.reply("cut", stop_reason="max_tokens"))
    reply = gemini(server).complete(ask("hi"), timeout=10)
    assert reply.stop_reason == "max_tokens"


@pytest.mark.parametrize(
    ("fault", "transient", "status"),
    [
        ("rate_limit", True, "429"),
        ("server_error", True, "500"),
        ("overloaded", True, "503"),
        ("bad_request", False, "400"),
        ("auth", False, "400"),
    ],
)
def test_status_errors_are_classified(
    server: FakeLLMServer, fault: str, transient: bool, status: str
) -> None:
    server.enqueue(Step.failing(fault, retry_after=1.5))  # type: ignore[arg-type]
    with pytest.raises(ProviderError) as info:
        gemini(server).complete(ask("hi"), timeout=10)
    assert isinstance(info.value, TransientProviderError) is transient
    assert f"HTTP {status}" in str(info.value)
    if fault == "rate_limit":
        # From the google.rpc.RetryInfo detail, as the real API sends it.
        assert isinstance(info.value, TransientProviderError)
        assert info.value.retry_after == 1.5
    # SDK retries are off: one request per call.
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("fault", "words"), [("drop", "connection"), ("malformed", "malformed"), ("slow", "no reply")]
)
def test_transport_faults_are_transient(server: FakeLLMServer, fault: str, words: str) -> None:
    latency = 3000 if fault == "slow" else None
    server.enqueue(Step.failing(fault, latency_ms=latency))  # type: ignore[arg-type]
    with pytest.raises(TransientProviderError) as info:
        gemini(server).complete(ask("hi"), timeout=0.5)
    assert words in str(info.value)
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_echoed_key_is_redacted(server: FakeLLMServer) -> None:
    server.enqueue(Step.failing("auth"))
    with pytest.raises(ProviderError) as info:
        gemini(server).complete(ask("hi"), timeout=10)
    text = f"{info.value} {info.value.hint} {info.value!r}"
    assert "invalid API key" in text
    assert GOOGLE_KEY not in text
    assert "[REDACTED" in text


def test_create_needs_a_key_and_accepts_gemini_api_key(server: FakeLLMServer) -> None:
    with pytest.raises(ProviderUnavailableError, match="GOOGLE_API_KEY"):
        create("gemini", ProviderOptions(settings=Settings(), env={}))
    env = {"GEMINI_API_KEY": "gemini-key-123456", "EVALCTL_GEMINI_BASE_URL": server.url}
    provider = create("gemini", ProviderOptions(settings=load_settings(env=env), env=env))
    provider.complete(ask("hi"), timeout=10)
    assert server.requests[-1].headers["x-goog-api-key"] == "gemini-key-123456"
    assert server.requests[-1].model == Settings().providers.gemini_model
    provider.close()
