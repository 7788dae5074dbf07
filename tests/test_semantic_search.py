"""semantic_search on embeddings: cosine ranking with the similarity on each row, the
catalog's vectors cached per model and catalog (counted, not timed), and lexical_search,
the FTS5 bm25 tool, beside it. The embedder is a bag-of-words fake (tests/semantic_support)."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from evalctl.embeddings import cosine
from evalctl.plugin_loader import get_tools
from evalctl.suites.sommelier.tools import (
    LEXICAL_SEARCH,
    NoEmbedderError,
    SemanticSearch,
)
from evalctl.suites.sommelier.vectors import forget_memory, wine_text
from evalctl.tools.base import ToolContext, ToolOutput
from tests.catalog_support import FIXTURES, make_ctx
from tests.semantic_support import CountingEmbedder, word_vector

CATALOG_SIZE = 50


@pytest.fixture
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture
def ctx(evalctl_home: Path, embedder: CountingEmbedder) -> ToolContext:
    context = make_ctx(evalctl_home)
    context.embedder = embedder
    return context


def search(ctx: ToolContext, **arguments: Any) -> ToolOutput:
    # A new tool object each time: nothing may be kept on the tool itself.
    return SemanticSearch().run(arguments, ctx)


def wines_in(output: ToolOutput) -> list[dict[str, Any]]:
    wines: list[dict[str, Any]] = json.loads(output.content)["wines"]
    return wines


def catalog_texts(embedder: CountingEmbedder) -> list[str]:
    """What was embedded besides queries: wine texts (each names its producer with 'by')."""
    return [t for t in embedder.texts if " by " in t]


# --- ranking ---------------------------------------------------------------------------------


def test_rows_carry_their_similarity_best_first(ctx: ToolContext) -> None:
    output = search(ctx, query="berry notes", limit=7)
    wines = wines_in(output)
    assert len(wines) == 7
    similarities = [w["similarity"] for w in wines]
    assert similarities == sorted(similarities, reverse=True)
    assert all(-1.0 <= s <= 1.0 for s in similarities)
    assert output.data["similarities"] == similarities
    assert output.data["rows"] == [w["name"] for w in wines]
    # The similarity is the cosine of the two embeddings, not some other score.
    top = wines[0]
    wine_vector = word_vector(wine_text_of(top))
    embedded = output.normalized_arguments["query"] if output.normalized_arguments else ""
    assert top["similarity"] == pytest.approx(cosine(word_vector(embedded), wine_vector), abs=1e-4)


def wine_text_of(row: dict[str, Any]) -> str:
    from evalctl.suites.sommelier.catalog_db import Wine

    return wine_text(Wine.model_validate({k: v for k, v in row.items() if k != "similarity"}))


def test_the_closest_wines_share_the_query_s_meaning(ctx: ToolContext) -> None:
    berry = wines_in(search(ctx, query="berry notes"))
    assert "berr" in berry[0]["description"].casefold()
    mineral = wines_in(search(ctx, query="mineral white"))
    assert mineral[0]["color"] == "white"
    assert [w["name"] for w in berry[:3]] != [w["name"] for w in mineral[:3]]


def test_limit_and_the_query_as_embedded_are_recorded(ctx: ToolContext) -> None:
    output = search(ctx, query="Посоветуй что-нибудь лёгкое и свежее к рыбе", limit=50)
    # Russian taste words become the English terms, which is what is embedded.
    assert output.normalized_arguments == {"query": "light fresh fish", "limit": 20}
    assert output.data["row_count"] == 20 and output.data["broadened"] is False
    assert output.data["terms"] == ["light", "fresh", "fish"]


def test_a_query_without_catalog_words_is_embedded_as_written(
    ctx: ToolContext, embedder: CountingEmbedder
) -> None:
    output = search(ctx, query="something nice please")
    assert output.normalized_arguments == {"query": "something nice please", "limit": 5}
    assert embedder.texts[0] == "something nice please"
    assert output.data["row_count"] == 5


def test_without_an_embedder_it_says_so(evalctl_home: Path) -> None:
    ctx = make_ctx(evalctl_home)
    ctx.embedder = None  # as outside a run
    with pytest.raises(NoEmbedderError, match="needs an embedding provider"):
        search(ctx, query="berry")


# --- the catalog's vectors are cached ----------------------------------------------------------


def test_the_second_run_embeds_no_wine(evalctl_home: Path) -> None:
    first = CountingEmbedder()
    ctx = make_ctx(evalctl_home)
    ctx.embedder = first
    rows = search(ctx, query="berry notes").data["rows"]
    assert len(catalog_texts(first)) == CATALOG_SIZE
    assert len(first.texts) == CATALOG_SIZE + 1  # and the query

    # A new process: nothing in memory, the same EVALCTL_HOME on disk.
    forget_memory()
    second = CountingEmbedder()
    ctx = make_ctx(evalctl_home)
    ctx.embedder = second
    assert search(ctx, query="berry notes").data["rows"] == rows
    search(ctx, query="mineral white")
    assert catalog_texts(second) == []
    assert second.texts == ["berry", "mineral white"]  # the two queries, as embedded
    cached = list((ctx.settings.private_home() / "embeddings").glob("wines-*.json"))
    assert len(cached) == 1


def test_another_model_embeds_the_catalog_again(evalctl_home: Path) -> None:
    ctx = make_ctx(evalctl_home)
    ctx.embedder = CountingEmbedder(model_sha256="ab" * 32)
    search(ctx, query="oak")
    other = CountingEmbedder(model_sha256="cd" * 32)
    ctx.embedder = other
    search(ctx, query="oak")
    assert len(catalog_texts(other)) == CATALOG_SIZE
    # A model known only by name is keyed by its name.
    named = CountingEmbedder(model="text-embedding-3-small", model_sha256=None)
    ctx.embedder = named
    search(ctx, query="oak")
    assert len(catalog_texts(named)) == CATALOG_SIZE
    forget_memory()
    again = CountingEmbedder(model="text-embedding-3-small", model_sha256=None)
    ctx.embedder = again
    search(ctx, query="oak")
    assert catalog_texts(again) == []


def test_a_changed_catalog_is_embedded_again(evalctl_home: Path, tmp_path: Path) -> None:
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    shutil.copy(FIXTURES / "wines.json", fixtures / "wines.json")
    ctx = make_ctx(evalctl_home)
    ctx.fixtures_dir = fixtures
    ctx.embedder = CountingEmbedder()
    search(ctx, query="oak")

    wines = json.loads((fixtures / "wines.json").read_text())
    wines[0]["description"] += " Now with a note of quokka."
    (fixtures / "wines.json").write_text(json.dumps(wines))
    changed = make_ctx(evalctl_home)
    changed.fixtures_dir = fixtures
    counting = CountingEmbedder()
    changed.embedder = counting
    output = search(changed, query="quokka")
    assert len(catalog_texts(counting)) == CATALOG_SIZE
    assert output.data["rows"][0] == wines[0]["name"], (output.data, counting.texts[:3])


def test_an_unreadable_cache_file_is_embedded_again(evalctl_home: Path) -> None:
    ctx = make_ctx(evalctl_home)
    ctx.embedder = CountingEmbedder()
    cache = Path(search(ctx, query="oak").data["embeddings_cache"])
    cache.write_text("{not json")
    forget_memory()
    again = CountingEmbedder()
    ctx.embedder = again
    search(ctx, query="oak")
    assert len(catalog_texts(again)) == CATALOG_SIZE
    assert json.loads(cache.read_text())["format"] == 1


def test_concurrent_cold_searches_embed_the_catalog_once(evalctl_home: Path) -> None:
    embedder = CountingEmbedder()
    lock = threading.Lock()

    class Serialised(CountingEmbedder):
        def embed(self, texts: Any, *, timeout: float) -> Any:
            with lock:  # the fake's list is not thread-safe; the search under test is
                return embedder.embed(texts, timeout=timeout)

    start = threading.Barrier(4)
    errors: list[BaseException] = []

    def one() -> None:
        ctx = make_ctx(evalctl_home)
        ctx.embedder = Serialised()
        start.wait()
        try:
            search(ctx, query="oak")
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(catalog_texts(embedder)) == CATALOG_SIZE


# --- lexical_search: the bm25 tool, by its own name --------------------------------------------


def test_lexical_search_is_bm25_under_its_own_name(evalctl_home: Path) -> None:
    tools = get_tools(["lexical_search", "semantic_search"])
    assert tools["lexical_search"] is LEXICAL_SEARCH
    description = LEXICAL_SEARCH.definition.description
    assert "FTS5" in description and "NOT embeddings" in description
    assert "embedding" in tools["semantic_search"].definition.description
    output = LEXICAL_SEARCH.run({"query": "vanilla oak buttery"}, make_ctx(evalctl_home))
    assert output.data["rows"][0] == "Rombauer Chardonnay"
    assert output.data["fts_query"] == '"vanilla"* OR "oak"* OR "butter"*'


def test_a_lock_that_cannot_be_taken_does_not_stop_the_search(evalctl_home: Path) -> None:
    ctx = make_ctx(evalctl_home)
    ctx.embedder = CountingEmbedder()
    cache = Path(search(ctx, query="oak").data["embeddings_cache"])
    cache.unlink()
    lock = cache.with_name(cache.name + ".lock")
    lock.unlink()
    lock.mkdir()  # a directory cannot be opened as the lock file
    forget_memory()
    embedder = CountingEmbedder()
    ctx.embedder = embedder
    assert search(ctx, query="oak").data["row_count"] == 5
    assert len(catalog_texts(embedder)) == CATALOG_SIZE
    assert cache.is_file()  # still written, atomically
