"""OpenAI-compatible and Gemini embeddings through the unmodified SDKs, against the fake
server speaking each API's embedding wire format on 127.0.0.1."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest

from evalctl.config import ProviderDefaults, Settings
from evalctl.embeddings import Embedder
from evalctl.errors import ProviderError, TransientProviderError
from evalctl.fakes.embedder import fake_vector, words
from evalctl.fakes.llm_server import FAKE_OPENAI_MODEL, FakeLLMServer, Step
from evalctl.providers.registry import ProviderOptions, create

WINE = "A dry red wine from Bordeaux with notes of blackcurrant."
OTHER = "Quarterly revenue grew by twelve percent."


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def _provider(name: str, server: FakeLLMServer, **defaults: str) -> Embedder:
    settings = Settings(providers=ProviderDefaults(**defaults))
    provider = create(name, ProviderOptions(settings=settings, env=server.env()))
    assert isinstance(provider, Embedder)
    return provider


def _embedding_requests(server: FakeLLMServer) -> list[dict[str, object]]:
    return [r.body for r in server.requests if "mbed" in r.path]


# -- OpenAI ---------------------------------------------------------------------------------


def test_openai_embeds_in_order_from_the_served_model(server: FakeLLMServer) -> None:
    result = _provider("openai", server).embed([WINE, OTHER], timeout=10)
    assert result.vectors == [fake_vector(WINE), fake_vector(OTHER)]
    # A compatible server without an embedding model set: the model it serves.
    assert result.model == FAKE_OPENAI_MODEL
    assert result.model_sha256 is None
    assert result.input_tokens == len(words(WINE)) + len(words(OTHER))
    (sent,) = _embedding_requests(server)
    assert sent == {"model": FAKE_OPENAI_MODEL, "input": [WINE, OTHER], "encoding_format": "float"}
    assert server.requests[-1].path == "/v1/embeddings"


def test_openai_embedding_model_setting_is_sent(server: FakeLLMServer) -> None:
    provider = _provider("openai", server, openai_embedding_model="text-embedding-3-small")
    assert provider.embed([WINE], timeout=10).model == "text-embedding-3-small"
    assert _embedding_requests(server)[0]["model"] == "text-embedding-3-small"


def test_openai_itself_defaults_to_text_embedding_3_small() -> None:
    env = {"OPENAI_API_KEY": "sk-test"}
    provider = create("openai", ProviderOptions(settings=Settings(), env=env))
    assert provider.embedding_model == "text-embedding-3-small"  # type: ignore[attr-defined]


def test_openai_rate_limit_is_transient_with_its_delay(server: FakeLLMServer) -> None:
    server.enqueue(Step.failing("rate_limit", retry_after=3))
    with pytest.raises(TransientProviderError) as info:
        _provider("openai", server).embed([WINE], timeout=10)
    assert info.value.retry_after == 3


def test_openai_bad_key_is_permanent(server: FakeLLMServer) -> None:
    server.enqueue(Step.failing("auth"))
    with pytest.raises(ProviderError) as info:
        _provider("openai", server).embed([WINE], timeout=10)
    assert not isinstance(info.value, TransientProviderError)
    assert "401" in info.value.message


def test_openai_sdk_default_base64_is_decoded_from_the_fake(server: FakeLLMServer) -> None:
    import openai

    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)
    reply = client.embeddings.create(model="m", input=[WINE], dimensions=32)
    client.close()
    assert _embedding_requests(server)[0]["encoding_format"] == "base64"
    assert reply.data[0].embedding == pytest.approx(fake_vector(WINE, 32), abs=1e-6)


# -- Gemini ---------------------------------------------------------------------------------


def test_gemini_embeds_through_batch_embed_contents(server: FakeLLMServer) -> None:
    result = _provider("gemini", server).embed([WINE, OTHER], timeout=10)
    assert result.vectors == [fake_vector(WINE), fake_vector(OTHER)]
    assert result.model == "gemini-embedding-001"
    assert result.input_tokens is None  # the Gemini API does not count them
    (request,) = [r for r in server.requests if "mbed" in r.path]
    assert request.path.endswith("/models/gemini-embedding-001:batchEmbedContents")
    assert [r["content"]["parts"] for r in request.body["requests"]] == [
        [{"text": WINE}],
        [{"text": OTHER}],
    ]


def test_gemini_splits_more_than_a_hundred_texts_and_keeps_their_order(
    server: FakeLLMServer,
) -> None:
    texts = [f"text number {i}" for i in range(150)]
    provider = _provider("gemini", server, gemini_embedding_model="text-embedding-004")
    result = provider.embed(texts, timeout=10)
    assert result.vectors == [fake_vector(t) for t in texts]
    assert [len(b["requests"]) for b in _embedding_requests(server)] == [100, 50]  # type: ignore[arg-type]
    assert all("text-embedding-004" in r.path for r in server.requests)


def test_gemini_server_error_is_transient(server: FakeLLMServer) -> None:
    server.enqueue(Step.failing("server_error"))
    with pytest.raises(TransientProviderError, match="500"):
        _provider("gemini", server).embed([WINE], timeout=10)


def test_the_fake_answers_gemini_single_embed_content(server: FakeLLMServer) -> None:
    body = {"content": {"parts": [{"text": WINE}]}, "outputDimensionality": 8}
    request = urllib.request.Request(
        f"{server.url}/v1beta/models/gemini-embedding-001:embedContent",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        reply = json.loads(response.read())
    assert reply == {"embedding": {"values": fake_vector(WINE, 8)}}
