"""The run's embedding provider: what `semantic_search` and the `similar` assertion embed with.

The run's provider itself when it has the `embeddings` capability (local, openai, gemini,
scripted). Otherwise the local engine, created on the first text a tool or check embeds and
closed with the run: a run against a provider without an embeddings API (Anthropic, a
target) still gets real embeddings, and a run that embeds nothing never starts a daemon.
When the run's provider is the local engine and it cannot embed, there is nothing to fall
back to. docs/writing-suites.md, "Similar meaning (embeddings)".
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from evalctl.embeddings import Embedder, Embeddings
from evalctl.errors import EvalctlError, ExitCode
from evalctl.providers.base import CAP_EMBEDDINGS, Provider
from evalctl.providers.options import ProviderOptions
from evalctl.providers.registry import EMBEDDING_FALLBACK, create, embedding_fallback


class NoEmbedderError(EvalctlError):
    """Something asked for embeddings and neither the run's provider nor the fallback has
    them: the run's setup, not the model, is at fault."""

    code = ExitCode.INFRA


def embeds(provider: Provider) -> bool:
    """Whether `provider` offers `embed()`: it claims the capability and has the method."""
    return CAP_EMBEDDINGS in provider.capabilities and isinstance(provider, Embedder)


class RunEmbedder:
    """An `Embedder` that is the run's provider, or a fallback provider made on first use."""

    def __init__(
        self,
        primary: Embedder | None,
        fallback: Callable[[], Provider] | None,
        *,
        reason: str = "",
    ) -> None:
        self._primary = primary
        self._fallback = fallback
        self._made: Provider | None = None
        self._lock = threading.Lock()
        # Why there is no embedder, for the error when something asks anyway.
        self._reason = reason

    @property
    def source(self) -> str:
        """Which provider embeds: "run" (the run's own), "local" (the fallback), or "none"."""
        if self._primary is not None:
            return "run"
        return EMBEDDING_FALLBACK if self._fallback is not None else "none"

    def embed(self, texts: Sequence[str], *, timeout: float) -> Embeddings:
        if self._primary is not None:
            return self._primary.embed(texts, timeout=timeout)
        return self._fallback_embedder().embed(texts, timeout=timeout)

    def _fallback_embedder(self) -> Embedder:
        # Cases of a concurrent run may ask at once: one fallback provider for all of them.
        with self._lock:
            if self._made is None:
                if self._fallback is None:
                    raise NoEmbedderError(
                        f"no embedding provider in this run: {self._reason}",
                        hint="run with a provider that embeds (local, openai, gemini)",
                    )
                self._made = self._fallback()
            made = self._made
        if not embeds(made):
            raise NoEmbedderError(
                f"the fallback embedding provider {made.name!r} cannot embed",
                hint="update evalctl's local engine, or run with openai or gemini",
            )
        assert isinstance(made, Embedder)  # embeds() checked it; narrows the type for mypy
        return made

    def close(self) -> None:
        with self._lock:
            made, self._made = self._made, None
        if made is not None:
            made.close()


def run_embedder(provider: Provider, options: ProviderOptions) -> RunEmbedder:
    """The run's embedder for `provider` (see the module docstring)."""
    if embeds(provider):
        assert isinstance(provider, Embedder)
        return RunEmbedder(provider, None)
    fallback = embedding_fallback(provider)
    if fallback is None:
        return RunEmbedder(None, None, reason="the local engine here has no embed()")
    fallback_options = ProviderOptions(settings=options.settings, env=options.env)
    return RunEmbedder(None, lambda: create(fallback, fallback_options))
