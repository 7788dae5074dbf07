"""A tiny provider registry: names map to lazy factories, so `evalctl --help` imports no SDK.

Detection order (when `--provider` is not given) follows DESIGN.md:
EVALCTL_LOCAL_MODEL > ANTHROPIC_API_KEY > GOOGLE_API_KEY/GEMINI_API_KEY > embedded default model.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evalctl.config import Settings
from evalctl.errors import BadInputError, ProviderUnavailableError
from evalctl.providers.base import Provider


@dataclass(frozen=True)
class ProviderOptions:
    settings: Settings
    env: Mapping[str, str]
    model: str | None = None
    script: Path | None = None
    # Provider-specific knobs that have no CLI flag of their own yet.
    extra: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProviderSpec:
    name: str
    summary: str
    factory: str  # "module:function", imported only when the provider is created
    # Returns None when the provider can run, else the reason it cannot.
    unavailable_reason: Callable[[ProviderOptions], str | None]


@dataclass(frozen=True)
class Availability:
    name: str
    summary: str
    available: bool
    reason: str


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


def _scripted_reason(options: ProviderOptions) -> str | None:
    if options.script is None:
        return "needs --script FILE (a test and demo provider that replays canned replies)"
    if not options.script.is_file():
        return f"script file {options.script} does not exist"
    return None


SPECS: dict[str, ProviderSpec] = {
    spec.name: spec
    for spec in (
        ProviderSpec(
            "local",
            "llama.cpp daemon over gRPC (embedded SmolLM2-135M by default)",
            "evalctl.providers.local:create",
            _local_reason,
        ),
        ProviderSpec(
            "anthropic",
            "Anthropic Messages API via the official SDK",
            "evalctl.providers.anthropic:create",
            _anthropic_reason,
        ),
        ProviderSpec(
            "gemini",
            "Google Gemini via the google-genai SDK",
            "evalctl.providers.gemini:create",
            _gemini_reason,
        ),
        ProviderSpec(
            "scripted",
            "replays canned replies from a script file (tests and demos)",
            "evalctl.providers.scripted:create",
            _scripted_reason,
        ),
    )
}


def availability(options: ProviderOptions) -> list[Availability]:
    rows = []
    for spec in SPECS.values():
        reason = spec.unavailable_reason(options)
        rows.append(Availability(spec.name, spec.summary, reason is None, reason or "ready"))
    return rows


def detect(options: ProviderOptions) -> str:
    """Pick a provider from the environment, in the documented priority order."""
    if options.env.get("EVALCTL_LOCAL_MODEL"):
        return "local"
    if options.env.get("ANTHROPIC_API_KEY"):
        return "anthropic"
    if gemini_key(options.env):
        return "gemini"
    return "local"


def create(name: str, options: ProviderOptions) -> Provider:
    spec = SPECS.get(name)
    if spec is None:
        raise BadInputError(
            f"unknown provider {name!r}", field="--provider", hint=f"choose from {', '.join(SPECS)}"
        )
    reason = spec.unavailable_reason(options)
    if reason is not None:
        raise ProviderUnavailableError(
            f"provider {name!r} is not available: {reason}",
            hint="`evalctl providers` shows what each provider needs",
        )
    module_name, func_name = spec.factory.split(":")
    factory: Callable[[ProviderOptions], Provider] = getattr(
        importlib.import_module(module_name), func_name
    )
    return factory(options)
