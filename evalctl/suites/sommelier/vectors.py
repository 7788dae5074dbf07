"""The catalog's embedding vectors, computed once per model and catalog and cached on disk.

`semantic_search` compares a query's vector with one vector per wine. Embedding the whole
catalog costs one request per batch of wines, so the vectors are kept in
`$EVALCTL_HOME/embeddings/`, one JSON file per (model, catalog): the model is named by its
file's SHA256 where the provider knows it (the local engine), else by its name; the catalog
by the SHA256 of the texts embedded for it, so a changed wine, or a change to how a wine is
described to the model, is embedded again. The file is written atomically under a lock
beside it, so two processes never both embed nor read half a file; in a process, vectors
once read are kept in memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from evalctl.config import ensure_private_dir
from evalctl.embeddings import Embedder, Embeddings
from evalctl.errors import EvalctlError, ExitCode
from evalctl.flock import held
from evalctl.results.io import write_text_atomic
from evalctl.suites.sommelier.catalog_db import Wine

# Bumped when the file's layout changes, so an old file is embedded again, not misread.
CACHE_FORMAT = 1
# Texts per embed request: small enough that one request stays well inside a call's time
# on the 2-core machine the local engine is measured on.
EMBED_BATCH = 16


class VectorsError(EvalctlError):
    """The embedding provider gave vectors that cannot be used: the run's setup is at fault."""

    code = ExitCode.INFRA


class _CacheFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: int
    model: str
    model_sha256: str | None
    catalog_sha256: str
    names: list[str]
    vectors: list[list[float]]


@dataclass(frozen=True)
class CatalogVectors:
    """One vector per wine, by name, from one model."""

    model: str
    model_sha256: str | None
    by_name: dict[str, list[float]]
    # Where they are kept on disk.
    path: Path


def wine_text(wine: Wine) -> str:
    """What is embedded for a wine: what a customer might describe it by."""
    return (
        f"{wine.name} by {wine.producer}: a {wine.sweetness} {wine.color} wine of "
        f"{wine.grape} from {wine.region}, {wine.country}. {wine.description}"
    )


def catalog_sha256(wines: Sequence[Wine]) -> str:
    """The hash the cache keys a catalog by: of the names and the texts embedded for them."""
    texts = [[w.name, wine_text(w)] for w in wines]
    return hashlib.sha256(json.dumps(texts, ensure_ascii=False).encode()).hexdigest()


def model_key(embeddings: Embeddings) -> str:
    """The model the vectors came from: its file's SHA256, else its name."""
    return embeddings.model_sha256 or f"name:{embeddings.model}"


def cache_path(home: Path, key: str, catalog_sha: str) -> Path:
    model_part = hashlib.sha256(key.encode()).hexdigest()[:16]
    return home / "embeddings" / f"wines-{model_part}-{catalog_sha[:16]}.json"


_memory: dict[Path, CatalogVectors] = {}
_memory_lock = threading.Lock()


def catalog_vectors(
    embedder: Embedder,
    wines: Sequence[Wine],
    model: Embeddings,
    home: Path,
    *,
    timeout: float,
) -> CatalogVectors:
    """The catalog's vectors from the model that gave `model` (a query's embedding, which
    names the model before any wine is embedded): from memory, else the cache file, else
    embedded now and written there."""
    key = model_key(model)
    catalog_sha = catalog_sha256(wines)
    path = cache_path(home, key, catalog_sha)
    with _memory_lock:
        known = _memory.get(path)
    if known is not None:
        return known
    ensure_private_dir(path.parent)
    with contextlib.ExitStack() as locked:
        # No lock file (a read-only cache directory): two processes may then both embed,
        # and the atomic write still leaves one whole file.
        with contextlib.suppress(OSError):
            locked.enter_context(held(path.with_name(path.name + ".lock")))
        # Read under the lock: a process that waited finds what the holder just wrote.
        vectors = _read(path, key, catalog_sha, wines)
        if vectors is None:
            vectors = _embed(embedder, wines, model, path, timeout)
            _write(path, vectors, catalog_sha)
    with _memory_lock:
        _memory[path] = vectors
    return vectors


def _read(path: Path, key: str, catalog_sha: str, wines: Sequence[Wine]) -> CatalogVectors | None:
    """The cached vectors, or None when there are none or they do not fit this catalog
    (unreadable, another format, another model or catalog, a wine missing)."""
    try:
        cached = _CacheFile.model_validate_json(path.read_bytes())
    except (OSError, ValidationError):
        return None
    fits = (
        cached.format == CACHE_FORMAT
        and (cached.model_sha256 or f"name:{cached.model}") == key
        and cached.catalog_sha256 == catalog_sha
        and cached.names == [w.name for w in wines]
        and len(cached.vectors) == len(cached.names)
    )
    if not fits:
        return None
    return CatalogVectors(
        cached.model,
        cached.model_sha256,
        dict(zip(cached.names, cached.vectors, strict=True)),
        path,
    )


def _embed(
    embedder: Embedder, wines: Sequence[Wine], model: Embeddings, path: Path, timeout: float
) -> CatalogVectors:
    texts = [wine_text(w) for w in wines]
    key = model_key(model)
    deadline = time.monotonic() + timeout
    vectors: list[list[float]] = []
    for start in range(0, len(texts), EMBED_BATCH):
        batch = texts[start : start + EMBED_BATCH]
        # The call's time is shared by every batch, not granted to each.
        got = embedder.embed(batch, timeout=max(0.001, deadline - time.monotonic()))
        if len(got.vectors) != len(batch):
            raise VectorsError(
                f"the embedding provider returned {len(got.vectors)} vectors for "
                f"{len(batch)} texts",
                hint="a provider's embed() returns one vector per text, in order",
            )
        if model_key(got) != key:
            raise VectorsError(
                f"the embedding model changed while the catalog was embedded "
                f"({key} for the query, {model_key(got)} for the wines)",
                hint="one run embeds with one model",
            )
        vectors.extend(got.vectors)
    by_name = {w.name: v for w, v in zip(wines, vectors, strict=True)}
    return CatalogVectors(model.model, model.model_sha256, by_name, path)


def _write(path: Path, vectors: CatalogVectors, catalog_sha: str) -> None:
    cached = _CacheFile(
        format=CACHE_FORMAT,
        model=vectors.model,
        model_sha256=vectors.model_sha256,
        catalog_sha256=catalog_sha,
        names=list(vectors.by_name),
        vectors=list(vectors.by_name.values()),
    )
    try:
        write_text_atomic(path, cached.model_dump_json())
    except OSError:
        # A cache that cannot be written costs the next run the embedding, not this one
        # its answer: the vectors are in hand.
        return


def forget_memory() -> None:
    """Drop the vectors held in this process (tests: a second run reads the file)."""
    with _memory_lock:
        _memory.clear()
