"""A deterministic embedder for fast tests: bag-of-words vectors, so texts that share words
are close and texts that share none are orthogonal, and it counts every text it embeds."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

from evalctl.embeddings import Embeddings

DIMENSIONS = 1024
_WORD = re.compile(r"[^\W\d_]{3,}")


def word_vector(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """One count per word (folded, first four letters: 'berries' and 'berry' meet) in a bucket
    picked by the word's hash."""
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.casefold()):
        bucket = int(hashlib.sha256(word[:4].encode()).hexdigest(), 16) % dimensions
        vector[bucket] += 1.0
    return vector


class CountingEmbedder:
    """An `Embedder` (evalctl.embeddings) that records what it was asked to embed."""

    def __init__(self, model: str = "bag-of-words", model_sha256: str | None = "ab" * 32):
        self.model = model
        self.model_sha256 = model_sha256
        self.texts: list[str] = []
        self.calls = 0

    def embed(self, texts: Sequence[str], *, timeout: float) -> Embeddings:
        assert timeout > 0
        self.calls += 1
        self.texts.extend(texts)
        return Embeddings(
            vectors=[word_vector(t) for t in texts],
            model=self.model,
            model_sha256=self.model_sha256,
        )
