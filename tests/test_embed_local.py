"""Embeddings from the local daemon on the embedded model: the Embed RPC end to end.

SmolLM2-135M is a causal language model, not an embedding model, so these tests assert only
what held by a wide margin when measured on it: a near-paraphrase scored 0.96-0.98 cosine
against 0.69-0.75 for an unrelated sentence.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from pathlib import Path

import pytest

from evalctl.chat import CompletionRequest, Message
from evalctl.config import load_settings
from evalctl.embeddings import Embedder, cosine
from evalctl.errors import BadInputError
from evalctl.modelfiles.manifest import resolve
from evalctl.providers.local import LocalProvider
from evalctl.server.embedding import (
    EMBED_N_CTX,
    EmbeddingContext,
    EmbeddingModelRef,
    EmbedTimeoutError,
)
from tests.local_helpers import (
    SLOW,
    THREADS,
    embedded_model,
    provider,  # noqa: F401  (fixture)
    reap_daemons,  # noqa: F401  (fixture)
)

pytestmark = pytest.mark.model

CAT = "The cat sat on the mat."
CAT_PARAPHRASE = "A cat was sitting on the mat."
REVENUE = "Quarterly revenue grew by 12 percent."
WINE = "A dry red wine from Bordeaux with notes of blackcurrant."
WINE_PARAPHRASE = "A red Bordeaux wine, dry, tasting of blackcurrant."
# SmolLM2-135M's hidden size: the length of its pooled vectors.
DIMENSIONS = 576


def _norm(vector: list[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


def test_three_texts_give_unit_vectors_of_the_model(provider: LocalProvider) -> None:  # noqa: F811
    assert isinstance(provider, Embedder)
    result = provider.embed([CAT, CAT_PARAPHRASE, REVENUE], timeout=SLOW)
    assert len(result.vectors) == 3
    assert {len(v) for v in result.vectors} == {DIMENSIONS}
    for vector in result.vectors:
        assert _norm(vector) == pytest.approx(1.0, abs=1e-4)
    model = embedded_model()
    assert result.model == model.name
    assert result.model_sha256 == model.expected_sha256
    assert result.input_tokens is not None and result.input_tokens >= 3 * 5

    cat, paraphrase, revenue = result.vectors
    assert cosine(cat, paraphrase) > cosine(cat, revenue) + 0.1
    assert cosine(cat, paraphrase) > cosine(paraphrase, revenue) + 0.1

    # The same text gives the same vector, alone or beside others, in another request.
    again = provider.embed([REVENUE, CAT], timeout=SLOW)
    assert again.vectors[1] == cat
    assert again.vectors[0] == revenue


def test_paraphrase_is_closer_than_an_unrelated_text_for_wine(provider: LocalProvider) -> None:  # noqa: F811
    wine, paraphrase, other = provider.embed([WINE, WINE_PARAPHRASE, REVENUE], timeout=SLOW).vectors
    assert cosine(wine, paraphrase) > cosine(wine, other) + 0.1


def test_embedding_leaves_generation_and_status_as_they_were(provider: LocalProvider) -> None:  # noqa: F811
    ask = CompletionRequest(messages=[Message.user("Name a fruit.")], max_tokens=12)
    before = provider.complete(ask, timeout=SLOW)
    assert provider.status().embedding_model_sha256 == ""
    provider.embed([CAT], timeout=SLOW)
    after = provider.complete(ask, timeout=SLOW)
    assert after.content == before.content
    status = provider.status()
    assert status.embedding_model_sha256 == embedded_model().expected_sha256
    assert status.embedding_model_name == embedded_model().name


def test_an_empty_text_is_bad_input_and_the_daemon_serves_on(provider: LocalProvider) -> None:  # noqa: F811
    with pytest.raises(BadInputError, match="text 1 is empty"):
        provider.embed([CAT, ""], timeout=SLOW)
    pid = provider.daemon_pid
    assert len(provider.embed([CAT], timeout=SLOW).vectors) == 1
    assert provider.daemon_pid == pid


def test_no_texts_need_no_daemon(provider: LocalProvider) -> None:  # noqa: F811
    result = provider.embed([], timeout=SLOW)
    assert result.vectors == []
    assert provider.daemon_pid is None


def _provider_embedding_with(path: Path, sha256: str) -> LocalProvider:
    model = embedded_model()
    assert model.expected_sha256 is not None
    return LocalProvider(
        load_settings(env=os.environ),
        model,
        model.expected_sha256,
        n_threads=THREADS,
        idle_timeout_s=600.0,
        start_timeout_s=SLOW,
        embedding_model=(resolve(str(path)), sha256),
    )


def test_a_second_gguf_embeds_under_its_own_name(tmp_path: Path, reap_daemons: None) -> None:  # noqa: F811
    model = embedded_model()
    assert model.expected_sha256 is not None
    # The same weights under another path: the daemon loads (and hashes) that file.
    other = tmp_path / "embedder.gguf"
    other.symlink_to(model.path)
    second = _provider_embedding_with(other, model.expected_sha256)
    try:
        result = second.embed([CAT], timeout=SLOW)
        assert result.model == "embedder"
        assert result.model_sha256 == model.expected_sha256
        assert second.status().embedding_model_name == "embedder"
        served = LocalProvider(
            load_settings(env=os.environ), model, model.expected_sha256, n_threads=THREADS
        )
        assert served.embed([CAT], timeout=SLOW).vectors == result.vectors
    finally:
        second.stop_daemon(grace_s=2)
        second.close()


def test_the_daemon_refuses_a_file_whose_hash_changed(tmp_path: Path, reap_daemons: None) -> None:  # noqa: F811
    other = tmp_path / "embedder.gguf"
    other.symlink_to(embedded_model().path)
    wrong = _provider_embedding_with(other, "0" * 64)
    try:
        with pytest.raises(BadInputError, match="the file changed"):
            wrong.embed([CAT], timeout=SLOW)
    finally:
        wrong.stop_daemon(grace_s=2)
        wrong.close()


def test_evalctl_embed_on_the_local_engine(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    reap_daemons: None,  # noqa: F811
) -> None:
    from tests.cli_helpers import run_cli

    monkeypatch.setenv("EVALCTL_LOCAL_THREADS", str(THREADS))
    result = run_cli(capsys, "embed", CAT, CAT_PARAPHRASE, "--provider", "local", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["model_sha256"] == embedded_model().expected_sha256
    assert report["dimensions"] == DIMENSIONS
    assert report["cosine"][0][1] == pytest.approx(report["cosine"][1][0])
    assert 0.5 < report["cosine"][0][1] < 1.0


def test_a_text_over_the_embedding_context_is_bad_input(provider: LocalProvider) -> None:  # noqa: F811
    long_text = "wine " * (EMBED_N_CTX + 50)
    with pytest.raises(BadInputError, match=r"text 1 is \d+ tokens; the embedding context holds"):
        provider.embed([CAT, long_text], timeout=SLOW)


def test_a_cancelled_request_stops_before_the_next_text() -> None:
    model = embedded_model()
    assert model.expected_sha256 is not None
    context = EmbeddingContext(n_threads=THREADS, n_threads_batch=THREADS, n_gpu_layers=0)
    ref = EmbeddingModelRef(model.path, model.expected_sha256, model.name)
    try:
        cancelled = threading.Event()
        cancelled.set()
        with pytest.raises(EmbedTimeoutError, match="after 0 of 2 texts"):
            context.embed(ref, [CAT, REVENUE], cancel=cancelled)
        with pytest.raises(EmbedTimeoutError):
            context.embed(ref, [CAT], deadline=time.monotonic() - 1)
        # Still loaded and serving: the refusal came between texts, not from llama.cpp.
        result = context.embed(ref, [CAT])
        assert result.load_ms == 0.0
        assert len(result.vectors[0]) == DIMENSIONS
    finally:
        context.close()
