"""Embeddings in the daemon: a second llama.cpp context in embedding mode, loaded on first use.

The generation context is not switched to embeddings (that changes how every later decode
is set up); a second `Llama` on the same GGUF, or on another one a request names, is opened
with `embedding=True` and mean pooling instead. The weights are memory-mapped, so a second
context on the served file shares its pages. The engine calls this under its model lock,
so an Embed waits for generation and generation for an Embed, as two requests always have.

Each text is decoded on its own: batched together, the same text came back with components
up to 1e-3 apart depending on its neighbours, and a cache keyed on the text and the model's
SHA256 must get the same vector whichever request computed it. Vectors are L2-normalised,
so a dot product is their cosine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalctl.server.prompt import BadRequestError

# Tokens per text. The decode computes the output layer for every token (llama-cpp-python
# marks each as an output for pooling), so memory and time grow with it: on SmolLM2-135M,
# one thread, a 503-token text took 3.6 s and the process grew by 150 MB; a 2,039-token one
# 22 s and 840 MB. 1,024 is a long answer's worth, at a cost the daemon can carry.
EMBED_N_CTX = 1024
POOLING = "mean"


class EmbedTimeoutError(Exception):
    """The request's deadline passed (or it was cancelled) between two texts."""


@dataclass(frozen=True)
class EmbeddingModelRef:
    """Which GGUF embeds: its path, the SHA256 the client verified, and a name to report.
    The path and the hash are its identity: another name for the same file reuses what is
    loaded."""

    path: Path
    sha256: str
    name: str = field(compare=False)
    # True for a file other than the served model's (which the client verified before the
    # daemon started): the daemon hashes it before loading it.
    check_sha256: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class EmbedResult:
    vectors: list[list[float]]
    tokens: list[int]
    model: EmbeddingModelRef
    dimensions: int
    load_ms: float
    # From loading (if it did) to the last vector.
    run_ms: float
    # Waiting for the model lock; the engine fills it in.
    queue_ms: float = 0.0


class EmbeddingContext:
    """One loaded embedding model at a time; another model replaces it. Not thread-safe:
    the engine's lock serialises callers."""

    def __init__(self, *, n_threads: int, n_threads_batch: int, n_gpu_layers: int):
        self._n_threads = n_threads
        self._n_threads_batch = n_threads_batch
        self._n_gpu_layers = n_gpu_layers
        self._llm: Any = None
        self.loaded: EmbeddingModelRef | None = None

    def embed(
        self,
        ref: EmbeddingModelRef,
        texts: Sequence[str],
        *,
        deadline: float | None = None,
        cancel: threading.Event | None = None,
    ) -> EmbedResult:
        """One L2-normalised vector per text. Raises BadRequestError for an empty text or one
        over EMBED_N_CTX tokens (before anything is decoded), EmbedTimeoutError when the
        deadline passes or `cancel` is set between two texts."""
        started = time.monotonic()
        load_ms = self._ensure(ref)
        llm = self._llm
        tokenized = [llm.tokenize(text.encode("utf-8")) for text in texts]
        for index, tokens in enumerate(tokenized):
            # llama.cpp cannot decode an empty batch, and a failed decode here left the
            # process to abort with a double free at exit: refuse it before decoding.
            if not tokens:
                raise BadRequestError(f"text {index} is empty: there is nothing to embed")
            if len(tokens) > EMBED_N_CTX:
                raise BadRequestError(
                    f"text {index} is {len(tokens)} tokens; the embedding context holds "
                    f"{EMBED_N_CTX}: split it into shorter passages"
                )
        vectors: list[list[float]] = []
        for text in texts:
            if (cancel is not None and cancel.is_set()) or (
                deadline is not None and time.monotonic() >= deadline
            ):
                raise EmbedTimeoutError(
                    f"timed out after {len(vectors)} of {len(texts)} texts were embedded"
                )
            vector = llm.embed(text, normalize=True, truncate=False)
            vectors.append([float(x) for x in vector])
        run_ms = (time.monotonic() - started) * 1000
        tokens = [len(t) for t in tokenized]
        return EmbedResult(vectors, tokens, ref, int(llm.n_embd()), load_ms, run_ms)

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()
            self._llm = None
            self.loaded = None

    def _ensure(self, ref: EmbeddingModelRef) -> float:
        """Load `ref` unless it is the loaded model; the milliseconds loading took."""
        if self._llm is not None and self.loaded == ref:
            return 0.0
        import llama_cpp

        self.close()
        started = time.monotonic()
        if ref.check_sha256:
            _check_sha256(ref)
        self._llm = llama_cpp.Llama(
            model_path=str(ref.path),
            embedding=True,
            pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
            # One text per decode, so the whole text must fit one batch and one ubatch.
            n_ctx=EMBED_N_CTX,
            n_batch=EMBED_N_CTX,
            n_ubatch=EMBED_N_CTX,
            n_threads=self._n_threads,
            n_threads_batch=self._n_threads_batch,
            n_gpu_layers=self._n_gpu_layers,
            verbose=False,
        )
        self.loaded = ref
        return (time.monotonic() - started) * 1000


def _check_sha256(ref: EmbeddingModelRef) -> None:
    from evalctl.modelfiles.manifest import sha256_file

    try:
        actual = sha256_file(ref.path)
    except Exception as exc:  # a missing or unreadable file: the request is at fault
        raise BadRequestError(f"cannot read embedding model {ref.path}: {exc}") from None
    if actual != ref.sha256:
        raise BadRequestError(
            f"embedding model {ref.path} has SHA256 {actual}, not the {ref.sha256} it was "
            "verified with: the file changed"
        )
