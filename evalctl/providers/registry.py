"""The provider registry: each provider's traits as data, a lazy factory, and the lookups.

Traits are everything the rest of evalctl may know about a provider without creating it:
what it can do (`capabilities`), whether cases may run concurrently against it, whether it
bills per token (cost estimates), whether `--provider all` includes it, and which
environment variables select it. No other module keeps a list of provider names.

Providers are registered through the plugin API (`Registry.add_provider`, evalctl.plugin):
the built-in ones by `register` below, a plugin's by its own `register`. The plugin layer
sits above this one, so the plugin loader hands in where the registered providers are read
from (`use_registered`); until it does (the daemon, `evalctl --help`), the lookups see the
built-in providers, registered by the same `register` into a table of their own.

Each built-in factory imports its provider module inside a function, so `evalctl --help`
imports no SDK, while editors and the import linter still follow the import.

Detection (when `--provider` is not given) tries the providers in registration order and
picks the first one whose `detect_env` has a variable set: EVALCTL_LOCAL_MODEL >
ANTHROPIC_API_KEY > GOOGLE_API_KEY/GEMINI_API_KEY > OPENAI_BASE_URL/OPENAI_API_KEY > a
plugin's variables; with none set, the local provider on the embedded model.
"""

from __future__ import annotations

import importlib.util
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from evalctl.errors import BadInputError, ProviderUnavailableError
from evalctl.providers.base import CAP_EMBEDDINGS, CAP_JSON_SCHEMA, CAP_TOOLS, Provider
from evalctl.providers.options import CaseValues as CaseValues
from evalctl.providers.options import ProviderFactory as ProviderFactory
from evalctl.providers.options import ProviderOptions as ProviderOptions
from evalctl.providers.options import ValueRenderer as ValueRenderer


@dataclass(frozen=True)
class ProviderTraits:
    """What evalctl may know about a provider without creating it."""

    # One line for `evalctl providers`.
    summary: str = ""
    # Returns None when the provider can run, else the reason it cannot; None: it always can.
    unavailable_reason: Callable[[ProviderOptions], str | None] | None = None
    # What the provider's requests support; a suite requiring more is skipped on it.
    capabilities: frozenset[str] = frozenset()
    # Cases may run in parallel against it (`--concurrency`); the local daemon serves as many
    # at once as it has slots (`local_parallel`, else the run's -j).
    concurrent: bool = False
    # Bills per token: its runs get a cost estimate from the price table.
    billed: bool = False
    # `--provider all` runs it; the scripted replayer is a test tool and joins only with --script.
    real: bool = True
    # Its answers cannot vary between samples (a reply script): `compare` judges its cases
    # exactly, any pass -> fail a regression, and `run --baseline` never re-samples them.
    deterministic: bool = False
    # Any of these set in the environment selects it when `--provider` is not given.
    detect_env: tuple[str, ...] = ()
    # How it runs on this machine, where that is known without creating it (the local
    # engine's backend and GPU layers); asked only when the provider is available.
    describe: Callable[[ProviderOptions], str] | None = None
    # Raises BadInputError where an option the user typed for it names nothing (a --script
    # or --model that is no file, a flag it cannot do without): bad input (exit 2), not an
    # unavailable provider (exit 3, which CI reads as a broken machine). Asked before
    # `unavailable_reason` by `create`; None: nothing to check.
    check_given: Callable[[ProviderOptions], None] | None = None
    # It answers from the reply script given with --script: `--provider all` runs it (not
    # `real`) when a script is given.
    replays_script: bool = False


@dataclass(frozen=True)
class ProviderSpec:
    """One registered provider: its name, factory and traits, and where it came from."""

    name: str
    # Imports the provider's module and builds it; called only when the provider is created.
    factory: ProviderFactory
    traits: ProviderTraits
    # `builtin`, or the plugin that registered it (`orders_plugin (evalctl.toml)`).
    origin: str = "builtin"

    @property
    def summary(self) -> str:
        return self.traits.summary

    @property
    def capabilities(self) -> frozenset[str]:
        return self.traits.capabilities

    @property
    def concurrent(self) -> bool:
        return self.traits.concurrent

    @property
    def billed(self) -> bool:
        return self.traits.billed

    @property
    def real(self) -> bool:
        return self.traits.real

    @property
    def detect_env(self) -> tuple[str, ...]:
        return self.traits.detect_env

    def unavailable_reason(self, options: ProviderOptions) -> str | None:
        check = self.traits.unavailable_reason
        return None if check is None else check(options)


class ProviderRegistrar(Protocol):
    """What `register` registers into: the plugin `Registry`, or the built-ins' own table."""

    def add_provider(self, name: str, factory: ProviderFactory, traits: ProviderTraits) -> None: ...


@dataclass(frozen=True)
class Availability:
    name: str
    summary: str
    available: bool
    reason: str
    origin: str = "builtin"
    # ProviderTraits.describe's answer; empty where the provider has none.
    detail: str = ""


def _missing_module(module: str, extra: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return f"Python package {module!r} is not installed ({extra})"
    return None


def _local_reason(options: ProviderOptions) -> str | None:
    missing = _missing_module("llama_cpp", "run `make setup`")
    if missing:
        return missing
    from evalctl.modelfiles.manifest import describe_model_problem

    return describe_model_problem(options.model or options.settings.local_model)


def _anthropic_reason(options: ProviderOptions) -> str | None:
    if not options.env.get("ANTHROPIC_API_KEY"):
        return "ANTHROPIC_API_KEY is not set"
    return _missing_module("anthropic", "pip install anthropic")


def gemini_key(env: Mapping[str, str]) -> str | None:
    return env.get("GOOGLE_API_KEY") or env.get("GEMINI_API_KEY") or None


def _gemini_reason(options: ProviderOptions) -> str | None:
    if not gemini_key(options.env):
        return "neither GOOGLE_API_KEY nor GEMINI_API_KEY is set"
    return _missing_module("google.genai", "pip install google-genai")


def openai_configured(env: Mapping[str, str]) -> bool:
    # A compatible server needs only its URL; OpenAI itself needs only the key.
    return bool(env.get("OPENAI_BASE_URL") or env.get("OPENAI_API_KEY"))


def _openai_reason(options: ProviderOptions) -> str | None:
    if not openai_configured(options.env):
        return "neither OPENAI_BASE_URL (an OpenAI-compatible server) nor OPENAI_API_KEY is set"
    return _missing_module("openai", "pip install 'evalctl[openai]'")


def _scripted_reason(options: ProviderOptions) -> str | None:
    if options.script is None:
        return "needs --script FILE (a test and demo provider that replays canned replies)"
    if not options.script.is_file():
        return f"script file {options.script} does not exist"
    return None


def _scripted_given(options: ProviderOptions) -> None:
    """Asking for the scripted provider without its --script is a missing flag, nothing wrong
    with the machine; a --script that is no file is bad input too."""
    script = options.script
    if script is None:
        raise BadInputError(
            "the scripted provider needs --script FILE (a reply script)",
            field="--script",
            hint="docs/writing-suites.md, 'Reply scripts', describes the file",
        )
    if not script.is_file():
        what = "is a directory, expected a reply script" if script.is_dir() else "no such file"
        raise BadInputError(what, file=str(script), field="--script")


def _local_given(options: ProviderOptions) -> None:
    """A --model (or `local_model`) that is neither a manifest name nor a file is bad input."""
    from evalctl.modelfiles.manifest import load_manifest, resolve

    model = options.model or options.settings.local_model
    if model is not None and load_manifest().get(model) is None:
        resolve(model)  # raises BadInputError naming the path that is not a file


def _local_describe(options: ProviderOptions) -> str:
    from evalctl.providers.local_engine import describe

    return describe(options.settings, options.env, options.model, options.extra)


# The factories: each imports its module only when that provider is created.
def _create_local(options: ProviderOptions) -> Provider:
    from evalctl.providers.local import create as create_local

    return create_local(options)


def _create_anthropic(options: ProviderOptions) -> Provider:
    from evalctl.providers.anthropic import create as create_anthropic

    return create_anthropic(options)


def _create_gemini(options: ProviderOptions) -> Provider:
    from evalctl.providers.gemini import create as create_gemini

    return create_gemini(options)


def _create_openai(options: ProviderOptions) -> Provider:
    from evalctl.providers.openai import create as create_openai

    return create_openai(options)


def _create_scripted(options: ProviderOptions) -> Provider:
    from evalctl.providers.scripted import create as create_scripted

    return create_scripted(options)


def _create_echo(options: ProviderOptions) -> Provider:
    from evalctl.providers.echo import create as create_echo

    return create_echo(options)


def _target_factory(name: str) -> ProviderFactory:
    # A target's settings live in its suite's `[[suite.target]]`: the runner builds it from
    # there (evalctl.runner.targets); asked for by name alone, there is nothing to build.
    def create_target(options: ProviderOptions) -> Provider:
        from evalctl.providers.targets.build import unconfigured

        raise unconfigured(name)

    return create_target


_TARGETS = {
    "python": "your application's module:function, called in this process (docs/targets.md)",
    "http": "your application behind an HTTP endpoint (docs/targets.md)",
    "command": "your application as a program: input JSON on stdin (docs/targets.md)",
}


# What every built-in provider offers; each with an `embed()` adds CAP_EMBEDDINGS.
_CHAT = frozenset({CAP_TOOLS, CAP_JSON_SCHEMA})
_CHAT_AND_EMBEDDINGS = _CHAT | {CAP_EMBEDDINGS}


def register(registry: ProviderRegistrar) -> None:
    """The built-in providers, in detection order: the first with one of its `detect_env`
    variables set wins."""
    registry.add_provider(
        "local",
        _create_local,
        ProviderTraits(
            "llama.cpp daemon over gRPC (embedded SmolLM2-135M by default)",
            _local_reason,
            capabilities=_CHAT_AND_EMBEDDINGS,
            concurrent=True,
            detect_env=("EVALCTL_LOCAL_MODEL",),
            describe=_local_describe,
            check_given=_local_given,
        ),
    )
    registry.add_provider(
        "anthropic",
        _create_anthropic,
        ProviderTraits(
            "Anthropic Messages API via the official SDK",
            _anthropic_reason,
            capabilities=_CHAT,
            concurrent=True,
            billed=True,
            detect_env=("ANTHROPIC_API_KEY",),
        ),
    )
    registry.add_provider(
        "gemini",
        _create_gemini,
        ProviderTraits(
            "Google Gemini via the google-genai SDK",
            _gemini_reason,
            capabilities=_CHAT_AND_EMBEDDINGS,
            concurrent=True,
            billed=True,
            detect_env=("GOOGLE_API_KEY", "GEMINI_API_KEY"),
        ),
    )
    registry.add_provider(
        "openai",
        _create_openai,
        ProviderTraits(
            "OpenAI or any OpenAI-compatible server (vLLM, Ollama, llama.cpp) via the openai SDK",
            _openai_reason,
            capabilities=_CHAT_AND_EMBEDDINGS,
            # Usually a serving cluster (vLLM, TGI) built for parallel load.
            concurrent=True,
            # Priced only when the model is in the price table: a model on one's own vLLM or
            # llama.cpp server has no entry, so no estimate.
            billed=True,
            detect_env=("OPENAI_BASE_URL", "OPENAI_API_KEY"),
        ),
    )
    registry.add_provider(
        "scripted",
        _create_scripted,
        ProviderTraits(
            "replays canned replies from a script file (tests and demos)",
            _scripted_reason,
            capabilities=_CHAT_AND_EMBEDDINGS,
            concurrent=True,
            real=False,
            deterministic=True,
            check_given=_scripted_given,
            replays_script=True,
        ),
    )
    registry.add_provider(
        "echo",
        _create_echo,
        ProviderTraits(
            "answers each request with its last user message as sent, no tools (checks "
            "templates and prompt variants)",
            # It accepts every request a chat provider does, so no suite is skipped on it.
            capabilities=_CHAT,
            concurrent=True,
            real=False,
        ),
    )
    # The targets: set up per suite, never detected, and not in `--provider all` (they are
    # applications, not models). A python target may not be thread-safe: one case at a time.
    for name, summary in _TARGETS.items():
        registry.add_provider(
            name,
            _target_factory(name),
            ProviderTraits(summary, concurrent=name != "python", real=False),
        )


class _BuiltinTable:
    """The built-in providers on their own, for lookups made before (or without) plugins."""

    def __init__(self) -> None:
        self.specs: dict[str, ProviderSpec] = {}

    def add_provider(self, name: str, factory: ProviderFactory, traits: ProviderTraits) -> None:
        self.specs[name] = ProviderSpec(name, factory, traits)


_BUILTIN = _BuiltinTable()
register(_BUILTIN)

RegisteredProviders = Callable[[], list[ProviderSpec]]


class _Source:
    registered: RegisteredProviders | None = None
    # A plugin's register() that looks a provider up must not start a second load.
    reading = threading.local()


def use_registered(registered: RegisteredProviders | None) -> None:
    """Where the registered providers (built-in and plugins') are read from; set by the
    plugin loader, None to go back to the built-ins alone."""
    _Source.registered = registered


def _specs() -> dict[str, ProviderSpec]:
    registered = _Source.registered
    if registered is None or getattr(_Source.reading, "active", False):
        return _BUILTIN.specs
    _Source.reading.active = True
    try:
        return {spec.name: spec for spec in registered()}
    finally:
        _Source.reading.active = False


class _LiveSpecs(Mapping[str, ProviderSpec]):
    """The registered providers by name, in registration order, read at each use."""

    def __getitem__(self, name: str) -> ProviderSpec:
        return _specs()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(_specs())

    def __len__(self) -> int:
        return len(_specs())


SPECS: Mapping[str, ProviderSpec] = _LiveSpecs()
# With no detection variable set: the local provider on the embedded model.
DEFAULT_PROVIDER = "local"


# Lookups by name: an unregistered name (a test double) has no capability and no trait.
def capabilities_of(name: str) -> frozenset[str]:
    spec = _specs().get(name)
    return spec.capabilities if spec is not None else frozenset()


def is_concurrent(name: str) -> bool:
    spec = _specs().get(name)
    return spec is not None and spec.concurrent


def is_deterministic(name: str) -> bool:
    """A registered provider whose answers cannot vary (`ProviderTraits.deterministic`)."""
    spec = _specs().get(name)
    return spec is not None and spec.traits.deterministic


def is_stand_in(name: str) -> bool:
    """A registered provider that is no model (`ProviderTraits.real` False): a reply script,
    echo, an application target. An unregistered name (a test double) is not one."""
    spec = _specs().get(name)
    return spec is not None and not spec.real


def is_billed(name: str) -> bool:
    spec = _specs().get(name)
    return spec is not None and spec.billed


def provider_choices() -> str:
    """`local | anthropic | ...` for help texts: the built-in providers only. Help text is
    built when the CLI module loads, before the command's error handling: loading plugins
    there would turn a broken plugin into a crash instead of exit 2."""
    return " | ".join(_BUILTIN.specs)


def availability(options: ProviderOptions) -> list[Availability]:
    rows = []
    for spec in _specs().values():
        reason = spec.unavailable_reason(options)
        describe = spec.traits.describe
        detail = describe(options) if describe is not None and reason is None else ""
        rows.append(
            Availability(
                spec.name, spec.summary, reason is None, reason or "ready", spec.origin, detail
            )
        )
    return rows


def detect(options: ProviderOptions) -> str:
    """Pick a provider from the environment: the first spec whose `detect_env` is set."""
    for spec in _specs().values():
        if any(options.env.get(var) for var in spec.detect_env):
            return spec.name
    return DEFAULT_PROVIDER


def create(name: str, options: ProviderOptions) -> Provider:
    specs = _specs()
    spec = specs.get(name)
    if spec is None:
        raise BadInputError(
            f"unknown provider {name!r}", field="--provider", hint=f"choose from {', '.join(specs)}"
        )
    if spec.traits.check_given is not None:
        spec.traits.check_given(options)
    reason = spec.unavailable_reason(options)
    if reason is not None:
        raise ProviderUnavailableError(
            f"provider {name!r} is not available: {reason}",
            hint="`evalctl providers` shows what each provider needs",
        )
    return spec.factory(options)
