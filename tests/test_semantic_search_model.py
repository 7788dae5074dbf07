"""semantic_search on the local engine's real embeddings of the embedded model: rows carry a
cosine similarity in [-1, 1], best first, and a second search embeds only its query."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from evalctl.embeddings import Embeddings
from evalctl.providers.local import LocalProvider
from evalctl.suites.sommelier.tools import SEMANTIC_SEARCH
from tests.catalog_support import make_ctx
from tests.local_helpers import (
    provider,  # noqa: F401  (fixture)
    reap_daemons,  # noqa: F401  (fixture)
)

pytestmark = pytest.mark.model


class Counted:
    """The local provider, counting the texts it is asked to embed."""

    def __init__(self, inner: LocalProvider) -> None:
        self.inner = inner
        self.texts = 0

    def embed(self, texts: Sequence[str], *, timeout: float) -> Embeddings:
        self.texts += len(texts)
        return self.inner.embed(texts, timeout=timeout)


def test_rows_on_real_embeddings_are_cosines_best_first(
    provider: LocalProvider,  # noqa: F811
    evalctl_home: Path,
) -> None:
    ctx = make_ctx(evalctl_home)
    counted = Counted(provider)
    ctx.embedder = counted
    output = SEMANTIC_SEARCH.run({"query": "berry notes", "limit": 10}, ctx)
    wines = json.loads(output.content)["wines"]
    similarities = [w["similarity"] for w in wines]
    assert len(similarities) == 10
    assert all(-1.0 <= s <= 1.0 for s in similarities)
    assert similarities == sorted(similarities, reverse=True)
    assert provider.model_sha256 and provider.model_sha256[:12] in output.data["embedding_model"]
    assert counted.texts == 1 + 50  # the query and the whole catalog, once
    SEMANTIC_SEARCH.run({"query": "mineral white"}, ctx)
    assert counted.texts == 1 + 50 + 1
