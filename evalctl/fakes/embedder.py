"""A deterministic fake embedding: hashed words and character trigrams, not a model.

For fast tests and demos, where a real embedding model would be slow or absent: the scripted
provider's `embed()` returns these vectors, and so do the fake OpenAI and Gemini embedding
endpoints (evalctl.fakes.llm_server), so a test can compare what a client read off the wire
with what was sent. It measures shared vocabulary, not meaning: texts that share words (or
word stems, through the trigrams) come out close, texts that share none close to orthogonal,
and a paraphrase in other words is as far as an unrelated sentence.

Each word adds 1 to a bucket picked by its SHA-256 (a sign bit from the same digest, so
unrelated words cancel rather than pile up), and each of its character trigrams 0.5; the
vector is then L2-normalised, like the local engine's. A text with no word characters gets
the zero vector. Same text, same vector, in every process and on every machine.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

from evalctl.embeddings import Embeddings

DIMENSIONS = 256
MODEL = "fake-hashed-words-256"
# What caches key on: stands in for a model file's hash, and changes with the algorithm.
MODEL_SHA256 = hashlib.sha256(b"evalctl.fakes.embedder: hashed words and trigrams, v1").hexdigest()
WORD_WEIGHT = 1.0
TRIGRAM_WEIGHT = 0.5
_WORD = re.compile(r"\w+")


def words(text: str) -> list[str]:
    """The words of `text`, case-folded: what the vector counts (and `input_tokens`)."""
    return _WORD.findall(text.casefold())


def _add(vector: list[float], feature: str, weight: float) -> None:
    digest = hashlib.sha256(feature.encode("utf-8")).digest()
    bucket = int.from_bytes(digest[:4], "big") % len(vector)
    vector[bucket] += weight if digest[4] & 1 else -weight


def fake_vector(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    """The L2-normalised hashed-feature vector of one text (all zeros without a word)."""
    vector = [0.0] * dimensions
    for word in words(text):
        _add(vector, "w:" + word, WORD_WEIGHT)
        padded = f"<{word}>"
        for i in range(len(padded) - 2):
            _add(vector, "t:" + padded[i : i + 3], TRIGRAM_WEIGHT)
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector


def fake_embeddings(texts: Sequence[str], dimensions: int = DIMENSIONS) -> Embeddings:
    """`Embeddings` of `texts` as the fake model gives them."""
    return Embeddings(
        vectors=[fake_vector(text, dimensions) for text in texts],
        model=MODEL,
        model_sha256=MODEL_SHA256,
        input_tokens=sum(len(words(text)) for text in texts),
    )
