"""The Provider protocol and the capability names; its error classes live in `evalctl.errors`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from evalctl.chat import CompletionRequest, CompletionResponse, Sampling

# Capabilities a suite may require; a provider lacking one gets that suite's cases skipped.
CAP_TOOLS = "tools"
CAP_JSON_SCHEMA = "json_schema"
# The provider has `embed(texts, *, timeout) -> evalctl.embeddings.Embeddings`.
CAP_EMBEDDINGS = "embeddings"
# Every capability there is: what a suite may `require` of a provider, and what a provider
# that supports everything offers.
CAPABILITIES = frozenset({CAP_TOOLS, CAP_JSON_SCHEMA, CAP_EMBEDDINGS})


@runtime_checkable
class Provider(Protocol):
    """Stateless single-turn completion; the runner owns the conversation."""

    name: str

    @property
    def model(self) -> str: ...

    @property
    def model_sha256(self) -> str | None: ...

    @property
    def capabilities(self) -> frozenset[str]: ...

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse: ...

    def close(self) -> None: ...


def provider_run_settings(provider: Provider) -> dict[str, Any]:
    """What a provider reports about how it ran (e.g. the local daemon's threads), for the
    results' `provider.settings`; providers without a `run_settings()` report nothing."""
    report = getattr(provider, "run_settings", None)
    return dict(report()) if callable(report) else {}


# What a provider sends of a request's sampling; one whose API takes fewer says so in a
# `sampling_params` attribute (Anthropic: none).
SAMPLING_PARAMS: frozenset[str] = frozenset({"temperature", "top_p", "seed"})


def sent_sampling(provider: Provider, sampling: Sampling) -> Sampling:
    """`sampling` as `provider` really sends it: None in each field its API does not take,
    so results never claim a seed that was not sent."""
    sent = getattr(provider, "sampling_params", SAMPLING_PARAMS)
    return Sampling(
        temperature=sampling.temperature if "temperature" in sent else None,
        top_p=sampling.top_p if "top_p" in sent else None,
        seed=sampling.seed if "seed" in sent else None,
    )


def provider_platform(provider: Provider) -> dict[str, Any]:
    """The provider's part of the results' platform record (evalctl.results.platform): for
    local, llama.cpp's build, the CPU and how the model ran; for an API, the fingerprints
    it reported. Providers without a `platform_info()` report nothing."""
    report = getattr(provider, "platform_info", None)
    return dict(report()) if callable(report) else {}


@dataclass(frozen=True)
class Speed:
    """Tokens per second a backend measured: generating, and evaluating the prompt (None
    when not measured yet)."""

    gen_tokens_per_s: float
    prompt_tokens_per_s: float | None = None
    # Where the figures come from, for messages ("the daemon's warm-up and recent requests").
    source: str = ""


def measured_speed(provider: Provider) -> Speed | None:
    """The speed a provider measured on this machine (the local daemon), or None: a cloud
    API's speed is not the machine's, and a provider without `measured_speed()` has none."""
    report = getattr(provider, "measured_speed", None)
    speed = report() if callable(report) else None
    return speed if isinstance(speed, Speed) else None
