"""The Provider base class, with its traits beside `complete()`, and the capability names;
its error classes live in `evalctl.errors`."""

from __future__ import annotations

import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from evalctl.chat import CompletionRequest, CompletionResponse, Sampling
from evalctl.providers.options import ProviderOptions

# Capabilities a suite may require; a provider lacking one gets that suite's cases skipped.
CAP_TOOLS = "tools"
CAP_JSON_SCHEMA = "json_schema"
# The provider has `embed(texts, *, timeout) -> evalctl.embeddings.Embeddings`.
CAP_EMBEDDINGS = "embeddings"
# Every capability there is: what a suite may `require` of a provider, and what a provider
# that supports everything offers.
CAPABILITIES = frozenset({CAP_TOOLS, CAP_JSON_SCHEMA, CAP_EMBEDDINGS})
# What a chat provider offers; one with an `embed()` adds CAP_EMBEDDINGS.
CHAT = frozenset({CAP_TOOLS, CAP_JSON_SCHEMA})
CHAT_AND_EMBEDDINGS = CHAT | {CAP_EMBEDDINGS}


def missing_package(module: str, install: str) -> str | None:
    """Why a provider cannot run without `module` (for its `unavailable_reason`), or None
    when it is installed; `install` says how to get it. Finds the module, never imports it."""
    if importlib.util.find_spec(module) is None:
        return f"Python package {module!r} is not installed ({install})"
    return None


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
    when its factory is registered (evalctl.plugin_adapt).

    Its traits, what evalctl may know without building it (capabilities, concurrency,
    billing, determinism, detection, availability), are class attributes and class methods:
    the registry (evalctl.providers.registry) reads them from the class it was given."""

    name: str
    # One line for `evalctl providers`.
    summary: ClassVar[str] = ""
    # What a suite may require of it (`CAPABILITIES`); a suite requiring more is skipped on
    # it. A class attribute; a wrapper (evalctl.providers.wrapper) sets its inner's on itself.
    capabilities: frozenset[str] = frozenset()
    # Cases may run in parallel against it (`--concurrency`).
    concurrent: ClassVar[bool] = False
    # Bills per token: its runs get a cost estimate from the price table.
    billed: ClassVar[bool] = False
    # A model: `--provider all` runs it. Stand-ins (a reply script, echo) and application
    # targets are not.
    real: ClassVar[bool] = True
    # Its answers cannot vary between samples (a reply script): `compare` judges its cases
    # exactly, any pass -> fail a regression, and `run --baseline` never re-samples them.
    deterministic: ClassVar[bool] = False
    # Any of these set in the environment selects it when `--provider` is not given
    # (providers are tried in registration order).
    detect_env: ClassVar[tuple[str, ...]] = ()
    # It answers from the reply script given with --script (docs/writing-suites.md, "Reply
    # scripts"), which the run checks before its first case: `--provider all` runs it
    # (though not `real`) when a script is given.
    replays_script: ClassVar[bool] = False
    # It is the user's application under test (a python, http or command target), not a
    # model: a side request such as a judge's cannot be asked of it.
    application: ClassVar[bool] = False
    # It runs a daemon of its own that `--restart-per-case` may stop and start (the local
    # provider, with `daemon_pid`, `ensure_running()` and `stop_daemon()`). Default: no.
    has_daemon: ClassVar[bool] = False

    @classmethod
    def unavailable_reason(cls, options: ProviderOptions) -> str | None:
        """None when it can run, else why not (a missing key, package or server): `evalctl
        providers` shows it, and `--provider name` exits 3 with it. Default: it always can."""
        return None

    @classmethod
    def check_given(cls, options: ProviderOptions) -> None:
        """Raise BadInputError where an option the user typed for it names nothing (a
        --script or --model that is no file, a flag it cannot do without): bad input (exit
        2), not an unavailable provider (exit 3, which CI reads as a broken machine). Asked
        before `unavailable_reason`. Default: nothing to check."""
        return None

    @classmethod
    def describe(cls, options: ProviderOptions) -> str:
        """How it runs on this machine, where that is known without creating it (the local
        engine's backend and GPU layers); asked only when it is available. Default: ""."""
        return ""

    @classmethod
    def unscripted(cls) -> Provider | None:
        """A replayer (`replays_script`) with no replies, for a run that gives no script and
        whose every case is driven by its kind's own tool calls: nothing will ask it. None:
        it cannot be made so (the default), and a missing script is bad input."""
        return None

    @property
    @abstractmethod
    def model(self) -> str:
        """The model (or application) that answers."""

    @property
    def model_sha256(self) -> str | None:
        """The weights' hash, where the provider knows it. Default: None."""
        return None

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

    def default_concurrency(self) -> int:
        """Cases a run sends at once when `-j` is not given (a `concurrent` provider only).
        Default: 1; the local daemon: its slots (`local_parallel`)."""
        return 1


# Builds a provider from its options: the class itself, or a function that imports its module
# (and its SDK) only when called.
ProviderFactory = Callable[[ProviderOptions], Provider]


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
