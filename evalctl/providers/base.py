"""The Provider base class and the capability names; its error classes live in `evalctl.errors`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

from evalctl.chat import CompletionRequest, CompletionResponse, Sampling

# Capabilities a suite may require; a provider lacking one gets that suite's cases skipped.
CAP_TOOLS = "tools"
CAP_JSON_SCHEMA = "json_schema"
# The provider has `embed(texts, *, timeout) -> evalctl.embeddings.Embeddings`.
CAP_EMBEDDINGS = "embeddings"
# Every capability there is: what a suite may `require` of a provider, and what a provider
# that supports everything offers.
CAPABILITIES = frozenset({CAP_TOOLS, CAP_JSON_SCHEMA, CAP_EMBEDDINGS})


@dataclass(frozen=True)
class Speed:
    """Tokens per second a backend measured: generating, and evaluating the prompt (None
    when not measured yet)."""

    gen_tokens_per_s: float
    prompt_tokens_per_s: float | None = None
    # Where the figures come from, for messages ("the daemon's warm-up and recent requests").
    source: str = ""


# What a provider sends of a request's sampling; one whose API takes fewer says so in its
# `sampling_params` (Anthropic: none).
SAMPLING_PARAMS: frozenset[str] = frozenset({"temperature", "top_p", "seed"})


class Provider(ABC):
    """The base of a provider: stateless single-turn completion; the runner owns the
    conversation. `model` and `complete()` are required; every other member is an optional
    hook with its default here. A plugin's provider that does not inherit is adapted once,
    when its factory is registered (evalctl.plugin_adapt)."""

    name: str
    # It runs a daemon of its own that `--restart-per-case` may stop and start (the local
    # provider, with `daemon_pid`, `ensure_running()` and `stop_daemon()`). Default: no.
    has_daemon: ClassVar[bool] = False

    @property
    @abstractmethod
    def model(self) -> str:
        """The model (or application) that answers."""

    @property
    def model_sha256(self) -> str | None:
        """The weights' hash, where the provider knows it. Default: None."""
        return None

    @property
    def capabilities(self) -> frozenset[str]:
        """What a suite may require of it (`CAPABILITIES`). Default: none."""
        return frozenset()

    @property
    def sampling_params(self) -> frozenset[str]:
        """The sampling fields it sends (`sent_sampling`). Default: all of them."""
        return SAMPLING_PARAMS

    @abstractmethod
    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        """One completion."""

    def close(self) -> None:
        """Let go of what it holds. Default: nothing."""
        return None

    def run_settings(self) -> dict[str, Any]:
        """How it ran (e.g. the local daemon's threads), for the results' `provider.settings`.
        Default: nothing."""
        return {}

    def platform_info(self) -> dict[str, Any]:
        """Its part of the results' platform record (evalctl.results.platform). Default:
        nothing."""
        return {}

    def measured_speed(self) -> Speed | None:
        """The speed it measured on this machine (the local daemon). Default: None (a cloud
        API's speed is not the machine's)."""
        return None


def provider_run_settings(provider: Provider) -> dict[str, Any]:
    """What a provider reports about how it ran (e.g. the local daemon's threads), for the
    results' `provider.settings` (its `run_settings()` hook)."""
    return dict(provider.run_settings())


def sent_sampling(provider: Provider, sampling: Sampling) -> Sampling:
    """`sampling` as `provider` really sends it: None in each field its API does not take,
    so results never claim a seed that was not sent."""
    sent = provider.sampling_params
    return Sampling(
        temperature=sampling.temperature if "temperature" in sent else None,
        top_p=sampling.top_p if "top_p" in sent else None,
        seed=sampling.seed if "seed" in sent else None,
    )


def provider_platform(provider: Provider) -> dict[str, Any]:
    """The provider's part of the results' platform record (evalctl.results.platform): for
    local, llama.cpp's build, the CPU and how the model ran; for an API, the fingerprints
    it reported (its `platform_info()` hook)."""
    return dict(provider.platform_info())


def measured_speed(provider: Provider) -> Speed | None:
    """The speed a provider measured on this machine (the local daemon), or None: a cloud
    API's speed is not the machine's (its `measured_speed()` hook)."""
    return provider.measured_speed()
