"""The engine on the real embedded model, in-process: prompt rendering (tools, tool results),
constrained decoding, determinism, timeouts and context overflow; and the tool-call parser."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest

from evalctl.chat import CompletionRequest, Message, Role, ToolCall, ToolDef, ToolResult
from evalctl.server.engine import ContextOverflowError, Engine, EngineConfig
from evalctl.server.prompt import BadRequestError
from evalctl.server.toolcalls import parse_tool_calls
from tests.local_helpers import LONGEST_TOKEN_BYTES, THREADS, embedded_model, unending_request

WEATHER = ToolDef(
    name="get_weather",
    description="Get the current weather for a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
SUBMIT = ToolDef(
    name="submit",
    description="Submit the final answer",
    parameters={
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    },
)


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    model = embedded_model()
    eng = Engine(EngineConfig(model.path, model.name, n_ctx=1024, n_threads=THREADS))
    eng.load()
    yield eng
    eng.close()


def _conversation_with_tool_result(marker: str) -> list[Message]:
    call = ToolCall(id="call_0", name="get_weather", arguments={"city": "Oslo"})
    return [
        Message.user("What is the weather in Oslo?"),
        Message(role=Role.ASSISTANT, tool_calls=[call]),
        Message.tool_result(ToolResult(tool_call_id="call_0", name="get_weather", content=marker)),
    ]


def test_tool_result_reaches_the_rendered_prompt(engine: Engine) -> None:
    marker = "CANARY-7731 light snow, -3 C"
    prompt = engine.render_prompt(
        CompletionRequest(messages=_conversation_with_tool_result(marker), tools=[WEATHER])
    )
    # The tools are described, the earlier call is in the assistant turn, and the tool's
    # output follows it in a turn of its own, before the new assistant turn.
    assert '"name": "get_weather"' in prompt.split("<|im_end|>")[0]
    call_at = prompt.index('<tool_call>[{"name": "get_weather", "arguments": {"city": "Oslo"}}]')
    result_at = prompt.index(marker)
    assert call_at < result_at < prompt.rindex("<|im_start|>assistant")
    assert "<|im_start|>tool" in prompt
    assert "name: get_weather" in prompt


def test_tool_errors_are_marked_and_tool_choice_none_hides_tools(engine: Engine) -> None:
    messages = [
        Message.user("hi"),
        Message.tool_result(ToolResult(tool_call_id="c", name="x", content="boom", is_error=True)),
    ]
    prompt = engine.render_prompt(CompletionRequest(messages=messages, tools=[WEATHER]))
    assert "status: error\nboom" in prompt
    hidden = engine.render_prompt(
        CompletionRequest(messages=[Message.user("hi")], tools=[WEATHER], tool_choice="none")
    )
    assert "get_weather" not in hidden


def test_unknown_forced_tool_is_a_bad_request(engine: Engine) -> None:
    with pytest.raises(BadRequestError, match="nope"):
        engine.render_prompt(
            CompletionRequest(messages=[Message.user("hi")], tools=[WEATHER], tool_choice="nope")
        )


def test_forced_tool_choice_returns_a_structured_call(engine: Engine) -> None:
    request = CompletionRequest(
        messages=[Message.user("What's the weather like in Paris today?")],
        tools=[WEATHER, SUBMIT],
        tool_choice="get_weather",
        max_tokens=60,
    )
    response = engine.complete(request).response
    assert response.stop_reason == "tool_use"
    assert [c.name for c in response.tool_calls] == ["get_weather"]
    assert isinstance(response.tool_calls[0].arguments["city"], str)
    assert response.tool_calls[0].id == "call_0"


def test_required_tool_choice_picks_one_of_the_tools(engine: Engine) -> None:
    request = CompletionRequest(
        messages=[Message.user("Submit the answer 42.")],
        tools=[WEATHER, SUBMIT],
        tool_choice="required",
        max_tokens=60,
    )
    response = engine.complete(request).response
    assert response.stop_reason == "tool_use"
    assert len(response.tool_calls) == 1
    assert response.tool_calls[0].name in {"get_weather", "submit"}


def test_json_schema_is_honoured(engine: Engine) -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
    }
    request = CompletionRequest(
        messages=[Message.user("Describe a person called Ann who is 30, as JSON.")],
        json_schema=schema,
        max_tokens=80,
    )
    response = engine.complete(request).response
    assert response.stop_reason == "end_turn"
    document = json.loads(response.content)
    assert isinstance(document["name"], str)
    assert isinstance(document["age"], int)


def test_default_decoding_is_deterministic(engine: Engine) -> None:
    request = CompletionRequest(messages=[Message.user("Name three colours.")], max_tokens=24)
    first = engine.complete(request).response
    # Something else in between, so the KV cache holds a different prefix.
    engine.complete(CompletionRequest(messages=[Message.user("Say yes.")], max_tokens=4))
    second = engine.complete(request).response
    assert first.content == second.content
    assert first.usage.output_tokens == second.usage.output_tokens > 0


SHARED_SYSTEM = (
    "You are a release engineer. You answer questions about command-line tools, their "
    "releases and the files attached to them, in short plain sentences. " * 6
)


def _seeded(question: str) -> CompletionRequest:
    # Sampled (temperature 0.8) with a seed: the output depends on every logit, so a cache
    # that changed any of them would show.
    return CompletionRequest(
        messages=[Message.system(SHARED_SYSTEM), Message.user(question)],
        tools=[WEATHER, SUBMIT],
        tool_choice="none",
        temperature=0.8,
        seed=7,
        max_tokens=40,
    )


def test_prefix_reuse_keeps_seeded_output_identical(engine: Engine) -> None:
    target = _seeded("Which archive formats do Linux releases usually ship?")
    engine.reset_cache()
    cold = engine.complete(target).response
    # A different question with the same system prompt and tools warms the cache.
    engine.reset_cache()
    engine.complete(_seeded("Name one tool that is written in Rust."))
    warm = engine.complete(target).response
    assert cold.usage.cached_input_tokens == 0
    # The whole shared prefix (system prompt and tools) came from the cache.
    assert warm.usage.cached_input_tokens > 100
    assert warm.usage.input_tokens == cold.usage.input_tokens
    assert warm.content == cold.content
    assert warm.usage.output_tokens == cold.usage.output_tokens


def test_a_degenerate_loop_stops_with_repetition(engine: Engine) -> None:
    # The grammar forces one item written 200 times (over 600 tokens, more than max_tokens),
    # so the model cannot leave the loop; the engine must end it before max_tokens.
    schema = {
        "type": "array",
        "items": {"type": "string", "enum": ["tar.gz"]},
        "minItems": 200,
        "maxItems": 200,
    }
    request = CompletionRequest(
        messages=[Message.user("List archive formats.")], json_schema=schema, max_tokens=150
    )
    response = engine.complete(request).response
    assert response.stop_reason == "repetition"
    assert response.usage.output_tokens < 150
    assert response.content.count('"tar.gz"') >= 4
    # A request may opt out: the same loop then runs to max_tokens.
    allowed = request.model_copy(update={"allow_repetition": True})
    assert engine.complete(allowed).response.stop_reason == "max_tokens"


def test_deltas_add_up_to_the_content(engine: Engine) -> None:
    deltas: list[str] = []
    request = CompletionRequest(messages=[Message.user("Say hello.")], max_tokens=12)
    response = engine.complete(request, on_delta=deltas.append).response
    assert "".join(deltas).strip() == response.content
    assert response.timings.ttft_ms is not None


def test_no_token_is_longer_than_the_unending_grammar_assumes(engine: Engine) -> None:
    llm = engine._llm
    longest = max(len(llm.detokenize([token])) for token in range(llm.n_vocab()))
    assert longest <= LONGEST_TOKEN_BYTES


def test_a_grammar_that_cannot_end_runs_to_max_tokens(engine: Engine) -> None:
    response = engine.complete(unending_request(max_tokens=24)).response
    assert response.stop_reason == "max_tokens"
    assert response.usage.output_tokens == 24


def test_a_passed_deadline_stops_after_one_token(engine: Engine) -> None:
    response = engine.complete(unending_request(), deadline=time.monotonic() - 1.0).response
    assert response.stop_reason == "timeout"
    assert response.usage.output_tokens == 1


def test_a_cancel_event_stops_generation_between_two_tokens(engine: Engine) -> None:
    cancel = threading.Event()
    cancel.set()
    cancelled = engine.complete(unending_request(), cancel=cancel).response
    assert cancelled.stop_reason == "timeout"
    assert cancelled.usage.output_tokens == 1
    # Set mid-generation (as a cancelled RPC does), it stops at the next token boundary.
    cancel = threading.Event()
    deltas: list[str] = []

    def on_delta(piece: str) -> None:
        deltas.append(piece)
        if len(deltas) == 5:
            cancel.set()

    response = engine.complete(unending_request(), cancel=cancel, on_delta=on_delta).response
    assert response.stop_reason == "timeout"
    # One delta per token here (plain ASCII); a token that ends mid-character has none.
    assert len(deltas) == 5 and 5 <= response.usage.output_tokens < 10


def test_max_tokens_is_reported(engine: Engine) -> None:
    request = CompletionRequest(messages=[Message.user("Count from 1 to 100.")], max_tokens=5)
    response = engine.complete(request).response
    assert response.stop_reason == "max_tokens"
    assert response.usage.output_tokens == 5


def test_context_overflow_reports_token_counts_and_engine_recovers(engine: Engine) -> None:
    huge = CompletionRequest(messages=[Message.user("lorem ipsum " * 1000)], max_tokens=10)
    with pytest.raises(ContextOverflowError) as info:
        engine.complete(huge)
    assert info.value.n_ctx == 1024
    assert info.value.prompt_tokens > 1024
    assert str(info.value.prompt_tokens) in str(info.value)
    ok = engine.complete(CompletionRequest(messages=[Message.user("Hi")], max_tokens=4))
    assert ok.response.usage.output_tokens > 0


# -- the tolerant parser (no model needed) -------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '<tool_call>[{"name": "get_weather", "arguments": {"city": "Oslo"}}]</tool_call>',
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>',
        '<tool_call>\n{"name": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}',
        '```json\n{"name": "get_weather", "parameters": {"city": "Oslo"}}\n```',
        '{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}',
        'get_weather(city="Oslo")',
        '[get_weather(city="Oslo")]',
        'Sure! {"name": "get_weather", "arguments": {"city": "Oslo"}}',
    ],
)
def test_parser_accepts_the_formats_small_models_use(text: str) -> None:
    content, calls = parse_tool_calls(text, [WEATHER], first_id=3)
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_3", "get_weather", {"city": "Oslo"})
    ]
    assert "get_weather" not in content


def test_parser_leaves_plain_answers_alone() -> None:
    for text in ('{"name": "Ann", "age": 3}', "The weather is nice.", "print(x)", ""):
        content, calls = parse_tool_calls(text, [WEATHER])
        assert calls == []
        assert content == text.strip()


def test_tagged_calls_keep_unknown_names_for_scoring() -> None:
    _, calls = parse_tool_calls('<tool_call>[{"name": "rm_rf", "arguments": {}}]', [WEATHER])
    assert [c.name for c in calls] == ["rm_rf"]


def test_several_calls_in_one_reply() -> None:
    text = (
        '<tool_call>[{"name": "get_weather", "arguments": {"city": "A"}}, '
        '{"name": "submit", "arguments": {"answer": "B"}}]</tool_call>'
    )
    _, calls = parse_tool_calls(text, [WEATHER, SUBMIT])
    assert [(c.id, c.name) for c in calls] == [("call_0", "get_weather"), ("call_1", "submit")]


def test_json_schema_with_tools_allows_an_answer_or_a_call(engine: Engine) -> None:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
    }
    request = CompletionRequest(
        messages=[Message.user("What's the weather in Rome?")],
        tools=[WEATHER],
        json_schema=schema,
        max_tokens=60,
    )
    response = engine.complete(request).response
    if response.tool_calls:
        assert response.stop_reason == "tool_use"
        assert response.tool_calls[0].name == "get_weather"
        assert response.content == ""
    else:
        assert isinstance(json.loads(response.content)["answer"], str)
