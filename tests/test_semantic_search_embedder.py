"""The run's embedding provider (evalctl.runner.embedding): the run's provider when it embeds,
else the local engine made on the first embed and closed with the run, else a clear error."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.config import Settings
from evalctl.embeddings import Embeddings
from evalctl.providers.base import CAP_EMBEDDINGS, CAP_TOOLS
from evalctl.providers.registry import ProviderOptions
from evalctl.runner.embedding import NoEmbedderError, RunEmbedder, embeds, run_embedder
from tests.semantic_support import CountingEmbedder


class ChatOnly:
    """A provider without embeddings."""

    def __init__(self, name: str = "anthropic") -> None:
        self.name = name
        self.closed = 0

    @property
    def model(self) -> str:
        return "chat"

    @property
    def model_sha256(self) -> str | None:
        return None

    @property
    def capabilities(self) -> frozenset[str]:
        return frozenset({CAP_TOOLS})

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        return CompletionResponse(content="")

    def close(self) -> None:
        self.closed += 1


class Embedding(ChatOnly):
    """A provider with the capability and `embed()`."""

    def __init__(self, name: str = "openai") -> None:
        super().__init__(name)
        self.inner = CountingEmbedder()

    @property
    def capabilities(self) -> frozenset[str]:
        return frozenset({CAP_TOOLS, CAP_EMBEDDINGS})

    def embed(self, texts: Sequence[str], *, timeout: float) -> Embeddings:
        return self.inner.embed(texts, timeout=timeout)


def options() -> ProviderOptions:
    return ProviderOptions(settings=Settings(), env={})


def test_a_provider_that_embeds_is_the_run_s_embedder() -> None:
    provider = Embedding()
    embedder = run_embedder(provider, options())
    assert embedder.source == "run"
    embedder.embed(["oak"], timeout=5)
    assert provider.inner.texts == ["oak"]
    embedder.close()
    assert provider.closed == 0  # the run closes its own provider


def test_claiming_the_capability_is_not_enough_without_embed() -> None:
    class Claims(ChatOnly):
        @property
        def capabilities(self) -> frozenset[str]:
            return frozenset({CAP_EMBEDDINGS})

    assert not embeds(Claims())
    assert embeds(Embedding())


def test_the_fallback_is_made_on_first_use_once_and_closed() -> None:
    made: list[Embedding] = []

    def make() -> Embedding:
        made.append(Embedding("local"))
        return made[-1]

    embedder = RunEmbedder(None, make)
    assert embedder.source == "local" and made == []  # nothing embedded: nothing started
    embedder.embed(["a"], timeout=5)
    embedder.embed(["b"], timeout=5)
    assert len(made) == 1 and made[0].inner.texts == ["a", "b"]
    embedder.close()
    assert made[0].closed == 1


def test_a_fallback_that_cannot_embed_says_so() -> None:
    embedder = RunEmbedder(None, lambda: ChatOnly("local"))
    with pytest.raises(NoEmbedderError, match="cannot embed"):
        embedder.embed(["a"], timeout=5)


def test_a_local_run_that_cannot_embed_has_no_fallback() -> None:
    embedder = run_embedder(ChatOnly("local"), options())
    assert embedder.source == "none"
    with pytest.raises(NoEmbedderError, match="no embedding provider in this run") as raised:
        embedder.embed(["a"], timeout=5)
    assert raised.value.hint
    embedder.close()


def test_a_provider_without_embeddings_falls_back_to_the_local_engine() -> None:
    embedder = run_embedder(ChatOnly("anthropic"), options())
    # Not started here: the local engine is created only when a tool or check embeds.
    assert embedder.source == "local"
    embedder.close()
