"""The grammar resampler (evalctl/server/grammar_sampler.py) on the embedded model: at
temperature 0 it writes exactly what llama-cpp-python's grammar-first chain writes, for an
answer under a schema and for a forced tool call; above it, every finished reply still obeys
the schema; and it does ask the grammar, rejecting tokens the free chain would have picked."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from evalctl.chat import CompletionRequest, Message
from evalctl.server import grammar_sampler
from evalctl.server.engine import Engine, EngineConfig
from tests.local_helpers import THREADS, embedded_model
from tests.test_server_engine import SUBMIT, WEATHER

TRIAGE = {
    "type": "object",
    "properties": {
        "kind": {"type": "string", "enum": ["binary", "archive", "checksum", "signature"]},
        "os": {"type": "string", "enum": ["linux", "darwin", "windows", "unknown"]},
        "count": {"type": "integer"},
    },
    "required": ["kind", "os", "count"],
}


def _engine(resample: bool) -> Engine:
    model = embedded_model()
    config = EngineConfig(
        model.path, model.name, n_ctx=1024, n_threads=THREADS, grammar_resample=resample
    )
    eng = Engine(config)
    eng.load()
    return eng


@pytest.fixture(scope="module")
def engines() -> Iterator[tuple[Engine, Engine]]:
    resampling, grammar_first = _engine(True), _engine(False)
    yield resampling, grammar_first
    resampling.close()
    grammar_first.close()


def _schema_request(temperature: float = 0.0, seed: int = 0) -> CompletionRequest:
    return CompletionRequest(
        messages=[Message.user("Classify the asset stern_linux_amd64.tar.gz as JSON.")],
        json_schema=TRIAGE,
        max_tokens=80,
        temperature=temperature,
        seed=seed,
    )


def test_greedy_schema_answer_matches_grammar_first(engines: tuple[Engine, Engine]) -> None:
    resampling, grammar_first = engines
    ours = resampling.complete(_schema_request()).response
    theirs = grammar_first.complete(_schema_request()).response
    assert ours.content == theirs.content
    assert ours.usage.output_tokens == theirs.usage.output_tokens
    document = json.loads(ours.content)
    assert document["kind"] in TRIAGE["properties"]["kind"]["enum"]  # type: ignore[index]


def test_greedy_forced_call_matches_grammar_first(engines: tuple[Engine, Engine]) -> None:
    def call(eng: Engine) -> Any:
        request = CompletionRequest(
            messages=[Message.user("What's the weather like in Paris today?")],
            tools=[WEATHER, SUBMIT],
            tool_choice="get_weather",
            max_tokens=60,
        )
        return eng.complete(request).response

    ours, theirs = call(engines[0]), call(engines[1])
    assert ours.stop_reason == "tool_use"
    assert ours.tool_calls == theirs.tool_calls


def test_sampled_answers_obey_the_schema(engines: tuple[Engine, Engine]) -> None:
    resampling = engines[0]
    finished = 0
    for seed in range(6):
        response = resampling.complete(_schema_request(temperature=1.5, seed=seed)).response
        if response.stop_reason != "end_turn":
            continue
        finished += 1
        document = json.loads(response.content)
        assert set(document) == {"kind", "os", "count"}
        assert document["os"] in TRIAGE["properties"]["os"]["enum"]  # type: ignore[index]
        assert isinstance(document["count"], int)
    assert finished > 0


def test_the_grammar_rejects_some_free_tokens(engines: tuple[Engine, Engine]) -> None:
    # Without a single rejection the grammar would not be constraining anything: the free
    # chain's first token is not "{" for this prompt.
    resampling = engines[0]
    llm = resampling._llm
    seen: list[grammar_sampler.GrammarResampler] = []
    original = grammar_sampler.GrammarResampler.close

    def keep(self: grammar_sampler.GrammarResampler) -> None:
        seen.append(self)
        original(self)

    grammar_sampler.GrammarResampler.close = keep  # type: ignore[method-assign]
    try:
        resampling.complete(_schema_request())
    finally:
        grammar_sampler.GrammarResampler.close = original  # type: ignore[method-assign]
    assert llm is not None and "_init_sampler" not in llm.__dict__
    assert len(seen) == 1
    assert seen[0].sampled > 0
    assert 0 < seen[0].resampled < seen[0].sampled
