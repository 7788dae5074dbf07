"""The fake embedder (hashed words and trigrams), the scripted provider's embed(), and which
built-in providers claim the `embeddings` capability (a suite requiring it is skipped on
the others)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evalctl.cases.loader import load_suite
from evalctl.cases.requirements import unmet_requirement
from evalctl.config import Settings
from evalctl.embeddings import Embedder, cosine
from evalctl.fakes import embedder
from evalctl.providers import registry
from evalctl.providers.base import CAP_EMBEDDINGS
from evalctl.providers.registry import ProviderOptions

WINE = "A dry red wine from Bordeaux with notes of blackcurrant."
SAME_WORDS = "Bordeaux: a red wine, dry, with blackcurrant notes."
OTHER = "Quarterly revenue grew by twelve percent."


def test_vectors_are_unit_length_and_of_the_fixed_size() -> None:
    for text in (WINE, OTHER, "x"):
        vector = embedder.fake_vector(text)
        assert len(vector) == embedder.DIMENSIONS
        assert math.sqrt(sum(x * x for x in vector)) == pytest.approx(1.0)


def test_shared_words_are_close_and_no_shared_words_far() -> None:
    wine, same, other = (embedder.fake_vector(t) for t in (WINE, SAME_WORDS, OTHER))
    assert cosine(wine, same) > 0.8
    assert abs(cosine(wine, other)) < 0.3


def test_a_word_and_its_stem_share_trigrams() -> None:
    berries, berry, revenue = (embedder.fake_vector(t) for t in ("berries", "berry", "revenue"))
    assert cosine(berries, berry) > cosine(berries, revenue) + 0.3


def test_same_text_same_vector_and_case_does_not_matter() -> None:
    assert embedder.fake_vector(WINE) == embedder.fake_vector(WINE)
    assert embedder.fake_vector(WINE.upper()) == embedder.fake_vector(WINE)


def test_the_vector_is_pinned_so_it_is_the_same_on_every_machine() -> None:
    # SHA-256 buckets, not Python's salted hash(): these positions never move.
    vector = embedder.fake_vector("wine")
    assert [i for i, x in enumerate(vector) if x] == _WINE_BUCKETS


def test_a_text_without_words_is_the_zero_vector() -> None:
    assert embedder.fake_vector(" ... ") == [0.0] * embedder.DIMENSIONS
    assert cosine(embedder.fake_vector(""), embedder.fake_vector(WINE)) == 0.0


def test_fake_embeddings_name_the_fake_model_and_count_words() -> None:
    result = embedder.fake_embeddings([WINE, OTHER])
    assert result.model == embedder.MODEL
    assert result.model_sha256 == embedder.MODEL_SHA256
    assert len(result.model_sha256) == 64
    assert result.input_tokens == len(embedder.words(WINE)) + len(embedder.words(OTHER)) == 16
    assert result.vectors == [embedder.fake_vector(WINE), embedder.fake_vector(OTHER)]


def _scripted(tmp_path: Path) -> object:
    script = tmp_path / "script.toml"
    script.write_text('[[default]]\ncontent = "ok"\n')
    return registry.create("scripted", ProviderOptions(Settings(), {}, script=script))


def test_the_scripted_provider_embeds_with_the_fake(tmp_path: Path) -> None:
    provider = _scripted(tmp_path)
    assert isinstance(provider, Embedder)
    assert CAP_EMBEDDINGS in provider.capabilities  # type: ignore[attr-defined]
    assert provider.embed([WINE], timeout=1.0) == embedder.fake_embeddings([WINE])


def test_which_built_in_providers_offer_embeddings() -> None:
    built_in = ("local", "anthropic", "gemini", "openai", "scripted")
    offering = {name for name in built_in if CAP_EMBEDDINGS in registry.traits(name).capabilities}
    assert offering == {"local", "gemini", "openai", "scripted"}


def test_a_suite_requiring_embeddings_is_skipped_on_anthropic(
    echo_suite: Path, tmp_path: Path
) -> None:
    echo_suite.write_text(
        echo_suite.read_text().replace("max_turns = 3", 'max_turns = 3\nrequires = ["embeddings"]')
    )
    suite = load_suite(echo_suite)
    anthropic = registry.create(
        "anthropic", ProviderOptions(Settings(), {"ANTHROPIC_API_KEY": "sk-test"})
    )
    reason = unmet_requirement(suite, anthropic, Settings())
    assert reason == "provider 'anthropic' lacks the 'embeddings' capability"
    assert unmet_requirement(suite, _scripted(tmp_path), Settings()) is None  # type: ignore[arg-type]


_WINE_BUCKETS = [2, 77, 127, 158, 224]
