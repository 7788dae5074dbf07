"""The provider registry: each provider's name, factory and the class whose traits apply, and
the lookups.

A provider's traits are everything the rest of evalctl may know about it without creating it:
what it can do (`capabilities`), whether cases may run concurrently against it, whether it
bills per token (cost estimates), whether `--provider all` includes it, which environment
variables select it, whether it can run here. They are class attributes (and class methods)
of its `Provider` class, beside `complete()` (evalctl.providers.base); the registry reads them
from the class it was given, so no provider module imports the registry. No other module
keeps a list of provider names.

Providers are registered through the plugin API (`Registry.add_provider`, evalctl.plugin):
the built-in ones by `register` below, a plugin's by its own `register`. The plugin layer
sits above this one, so the plugin loader hands in where the registered providers are read
from (`use_registered`); until it does (the daemon, `evalctl --help`), the lookups see the
built-in providers, registered by the same `register` into a table of their own.

Each built-in is registered with two functions that import its provider module only when
called: its factory, and the one returning its class (asked on the first trait lookup). So
`evalctl --help` imports no provider module, and none imports a vendor SDK at its top, while
editors and the import linter still follow the import.

Detection (when `--provider` is not given) tries the providers in registration order and
picks the first one whose `detect_env` has a variable set: EVALCTL_LOCAL_MODEL >
ANTHROPIC_API_KEY > GOOGLE_API_KEY/GEMINI_API_KEY > OPENAI_BASE_URL/OPENAI_API_KEY > a
plugin's variables; with none set, the local provider on the embedded model.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Protocol

from evalctl.errors import BadInputError, ProviderUnavailableError
from evalctl.providers.base import Provider
from evalctl.providers.base import ProviderFactory as ProviderFactory
from evalctl.providers.options import CaseValues as CaseValues
from evalctl.providers.options import ProviderOptions as ProviderOptions
from evalctl.providers.options import ValueRenderer as ValueRenderer

# Where a provider's traits come from: its class, or a function returning its class (which
# imports the module on the first lookup). A plugin's `ProviderTraits` (evalctl.plugin_adapt)
# is made a class before it gets here.
TraitsSource = type[Provider] | Callable[[], type[Provider]]


@dataclass(frozen=True)
class ProviderSpec:
    """One registered provider: its name, factory and traits, and where it came from."""

    name: str
    # Imports the provider's module and builds it; called only when the provider is created.
    factory: ProviderFactory
    traits_from: TraitsSource
    # `builtin`, or the plugin that registered it (`orders_plugin (evalctl.toml)`).
    origin: str = "builtin"

    @property
    def traits(self) -> type[Provider]:
        """The class whose class attributes and class methods are its traits (its module
        imported now)."""
        source = self.traits_from
        cls = source if isinstance(source, type) else source()
        if not (isinstance(cls, type) and issubclass(cls, Provider)):
            raise BadInputError(
                f"provider {self.name!r} ({self.origin}): its traits class {cls!r} is not a "
                "Provider class",
                field="plugins",
            )
        return cls


class ProviderRegistrar(Protocol):
    """What `register` registers into: the plugin `Registry`, or the built-ins' own table."""

    def add_provider(
        self,
        name: str,
        factory: ProviderFactory | type[Provider],
        traits: TraitsSource | None = None,
    ) -> None: ...


@dataclass(frozen=True)
class Availability:
    name: str
    summary: str
    available: bool
    reason: str
    origin: str = "builtin"
    # The provider's `describe()`; empty where it says nothing.
    detail: str = ""


# Each built-in: its factory and its class, each importing the provider's module only when
# called.
def _create_local(options: ProviderOptions) -> Provider:
    from evalctl.providers.local import create as create_local

    return create_local(options)


def _local() -> type[Provider]:
    from evalctl.providers.local import LocalProvider

    return LocalProvider


def _create_anthropic(options: ProviderOptions) -> Provider:
    from evalctl.providers.anthropic import create as create_anthropic

    return create_anthropic(options)


def _anthropic() -> type[Provider]:
    from evalctl.providers.anthropic import AnthropicProvider

    return AnthropicProvider


def _create_gemini(options: ProviderOptions) -> Provider:
    from evalctl.providers.gemini import create as create_gemini

    return create_gemini(options)


def _gemini() -> type[Provider]:
    from evalctl.providers.gemini import GeminiProvider

    return GeminiProvider


def _create_openai(options: ProviderOptions) -> Provider:
    from evalctl.providers.openai import create as create_openai

    return create_openai(options)


def _openai() -> type[Provider]:
    from evalctl.providers.openai import OpenAIProvider

    return OpenAIProvider


def _create_scripted(options: ProviderOptions) -> Provider:
    from evalctl.providers.scripted import create as create_scripted

    return create_scripted(options)


def _scripted() -> type[Provider]:
    from evalctl.providers.scripted import ScriptedProvider

    return ScriptedProvider


def _create_echo(options: ProviderOptions) -> Provider:
    from evalctl.providers.echo import create as create_echo

    return create_echo(options)


def _echo() -> type[Provider]:
    from evalctl.providers.echo import EchoProvider

    return EchoProvider


def _target_factory(name: str) -> ProviderFactory:
    # A target's settings live in its suite's `[[suite.target]]`: the runner builds it from
    # there (evalctl.runner.targets); asked for by name alone, there is nothing to build.
    def create_target(options: ProviderOptions) -> Provider:
        from evalctl.providers.targets.build import unconfigured

        raise unconfigured(name)

    return create_target


def _python_target() -> type[Provider]:
    from evalctl.providers.targets.python_target import PythonTargetProvider

    return PythonTargetProvider


def _http_target() -> type[Provider]:
    from evalctl.providers.targets.http_target import HttpTargetProvider

    return HttpTargetProvider


def _command_target() -> type[Provider]:
    from evalctl.providers.targets.command_target import CommandTargetProvider

    return CommandTargetProvider


def register(registry: ProviderRegistrar) -> None:
    """The built-in providers, in detection order: the first with one of its `detect_env`
    variables set wins. Their traits are their classes'."""
    registry.add_provider("local", _create_local, _local)
    registry.add_provider("anthropic", _create_anthropic, _anthropic)
    registry.add_provider("gemini", _create_gemini, _gemini)
    registry.add_provider("openai", _create_openai, _openai)
    registry.add_provider("scripted", _create_scripted, _scripted)
    registry.add_provider("echo", _create_echo, _echo)
    # The targets: set up per suite, never detected, and not in `--provider all` (they are
    # applications, not models).
    registry.add_provider("python", _target_factory("python"), _python_target)
    registry.add_provider("http", _target_factory("http"), _http_target)
    registry.add_provider("command", _target_factory("command"), _command_target)


class _BuiltinTable:
    """The built-in providers on their own, for lookups made before (or without) plugins."""

    def __init__(self) -> None:
        self.specs: dict[str, ProviderSpec] = {}

    def add_provider(
        self,
        name: str,
        factory: ProviderFactory | type[Provider],
        traits: TraitsSource | None = None,
    ) -> None:
        if traits is None:
            assert isinstance(factory, type)  # the class is the factory and carries the traits
            traits = factory
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
# What embeds for a run whose provider cannot (evalctl.runner.embedding): the local engine.
EMBEDDING_FALLBACK = "local"


def traits(name: str) -> type[Provider]:
    """The traits of the provider registered as `name`: the class attributes and class
    methods of its class. An unregistered name (a test double) has `Provider`'s defaults:
    no capability, not concurrent, not billed, not deterministic, real."""
    spec = _specs().get(name)
    return Provider if spec is None else spec.traits


def create_unscripted(name: str) -> Provider | None:
    """The replayer `name` with no replies (`Provider.unscripted`), for a run that gives no
    script and whose cases no model answers; None where it cannot be made so (not a
    replayer, or one whose class says no): a missing script is then bad input."""
    cls = traits(name)
    return cls.unscripted() if cls.replays_script else None


def embedding_fallback(provider: Provider) -> str | None:
    """The provider a run on `provider` that cannot embed falls back to for embeddings;
    None where `provider` is that fallback itself: there is nothing to fall back to."""
    return None if provider.name == EMBEDDING_FALLBACK else EMBEDDING_FALLBACK


def provider_choices() -> str:
    """`local | anthropic | ...` for help texts: the built-in providers only. Help text is
    built when the CLI module loads, before the command's error handling: loading plugins
    there would turn a broken plugin into a crash instead of exit 2."""
    return " | ".join(_BUILTIN.specs)


def availability(options: ProviderOptions) -> list[Availability]:
    rows = []
    for spec in _specs().values():
        cls = spec.traits
        reason = cls.unavailable_reason(options)
        detail = cls.describe(options) if reason is None else ""
        rows.append(
            Availability(
                spec.name, cls.summary, reason is None, reason or "ready", spec.origin, detail
            )
        )
    return rows


def detect(options: ProviderOptions) -> str:
    """Pick a provider from the environment: the first spec whose `detect_env` is set."""
    for spec in _specs().values():
        if any(options.env.get(var) for var in spec.traits.detect_env):
            return spec.name
    return DEFAULT_PROVIDER


def create(name: str, options: ProviderOptions) -> Provider:
    specs = _specs()
    spec = specs.get(name)
    if spec is None:
        raise BadInputError(
            f"unknown provider {name!r}", field="--provider", hint=f"choose from {', '.join(specs)}"
        )
    spec.traits.check_given(options)
    reason = spec.traits.unavailable_reason(options)
    if reason is not None:
        raise ProviderUnavailableError(
            f"provider {name!r} is not available: {reason}",
            hint="`evalctl providers` shows what each provider needs",
        )
    return spec.factory(options)
