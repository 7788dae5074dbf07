"""Embedding vectors: what an embedding provider returns, the protocol tools and checks use to
ask for them, and cosine similarity.

A provider with the `embeddings` capability (evalctl.providers.base.CAP_EMBEDDINGS) has an
`embed(texts, *, timeout)` method returning `Embeddings`; tools (semantic search) and checks
(`similar`) depend only on the `Embedder` protocol here, so a fake embedder stands in for
the real one in fast tests.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Embeddings:
    """One vector per input text, in input order, from `model`."""

    vectors: list[list[float]]
    # The model's name as the provider reports it.
    model: str
    # The SHA256 of the model file where known (the local engine): what caches key on, since
    # a name can be reused for other weights.
    model_sha256: str | None = None
    input_tokens: int | None = None


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into vectors: a provider with `embeddings`, or a fake."""

    def embed(self, texts: Sequence[str], *, timeout: float) -> Embeddings: ...


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors of one length; 0.0 when either is all zeros (no
    direction to compare), rather than a division by zero."""
    if len(a) != len(b):
        raise ValueError(f"vectors of different lengths: {len(a)} and {len(b)}")
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
