"""The plugin API: everything a plugin can add to evalctl, on one page.

A plugin is a module with a `register(registry)` function (or such a callable itself). It is
loaded from either place:

- an installed package's entry point in the group `evalctl.plugins`, naming the module or the
  callable, e.g. in its `pyproject.toml`::

      [project.entry-points."evalctl.plugins"]
      orders = "orders_plugin"

- `plugins = ["orders_plugin"]` in `evalctl.toml`, imported from the project directory (the
  one holding `evalctl.toml`) first, then from `sys.path`; `"module:function"` names a
  callable other than `register`.

`register` receives a `Registry` and calls its `add_*` methods. The extension points:

- `add_kind(name, kind)`: a suite kind (`[suite] kind = "<name>"`), a `SuiteKind`
  (its `drive()` returns a `Drive`).
- `add_tool(name, tool)`: a tool suites list in `[suite] tools`, a `Tool`.
- `add_check(name, check)`: an assertion type (`[[case.assert]] type = "<name>"`), a
  `Check` whose `type_name` is `name`.
- `add_resource(name, check, open=None)`: something a suite can `requires = ["<name>"]`:
  a check saying whether this run can provide it (else the suite's cases are `skipped` with
  the reason), and optionally an opener whose value tools find in `ctx.resources[name]`.
- `add_setting(PluginSetting(name, type_, default))`: a top-level key of `evalctl.toml`,
  validated when the file is read; the plugin reads it with `SETTING.get(settings)`.
- `add_provider(name, provider_class)`: a provider (`--provider <name>`): a `Provider`
  subclass built from `ProviderOptions`, whose class attributes and class methods are its
  traits (summary, when it is unavailable, capabilities, concurrent, billed, `real` for
  `--provider all`, the environment variables that select it when `--provider` is not
  given). `add_provider(name, factory, traits)` takes a factory of `ProviderOptions`
  instead, with the class whose traits apply (or a function returning it), or a
  `ProviderTraits` for a provider whose class carries none. The built-in providers register
  through this very call (`evalctl.providers.registry.register`).
- `set_judge(factory)`: what makes the run's judge (`ScoringContext.judge`) from a
  `JudgeSetup`; one plugin provides it (the built-in `evalctl.judge`).

Kinds, tools and checks may be given as the object or as a zero-argument callable returning it
(a class, a function): the callable runs on first use, so a plugin's heavy imports cost
nothing until one of its suites runs. The built-ins (the suites under `evalctl/suites/`, the
`assert` kind with its assertion types, the judge) are plugins written against this very
API. `evalctl plugins` lists what is loaded and from where.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeGuard

from pydantic import TypeAdapter, ValidationError

from evalctl import userfiles
from evalctl.cases.schema import Case, Suite, SuiteTable
from evalctl.chat import ToolDef
from evalctl.config import Settings
from evalctl.errors import BadInputError
from evalctl.plugin_adapt import (
    ProviderTraits,
    adapt_check,
    adapt_kind,
    adapt_tool,
    adapted_judge_factory,
    adapted_provider_factory,
    defined_name,
    has_shape,
    traits_class,
)
from evalctl.providers.base import Provider
from evalctl.providers.registry import (
    ProviderFactory,
    ProviderOptions,
    ProviderSpec,
    TraitsSource,
)
from evalctl.results.models import CheckResult, ToolCallRecord, not_applicable
from evalctl.scoring.answer import Answer
from evalctl.scoring.check import (
    Check,
    NamedCheck,
    NoParams,
    ScoringContext,
    Transcript,
    named_checks,
)
from evalctl.scoring.judging import (
    GradeRequest,
    JudgeFactory,
    Judgement,
    JudgeService,
    JudgeSetup,
)
from evalctl.scoring.kinds import Drive, RequestShape, SuiteKind
from evalctl.tools.base import Tool, ToolContext, ToolInputError, ToolOutput

__all__ = [
    "ENTRY_POINT_GROUP",
    "Answer",
    "Case",
    "Check",
    "CheckResult",
    "Drive",
    "GradeRequest",
    "JudgeFactory",
    "JudgeService",
    "JudgeSetup",
    "Judgement",
    "NamedCheck",
    "NoParams",
    "Origin",
    "PluginSetting",
    "Provider",
    "ProviderFactory",
    "ProviderOptions",
    "ProviderTraits",
    "Registry",
    "RequestShape",
    "ResourceCheck",
    "ResourceOpener",
    "ScoringContext",
    "Settings",
    "Suite",
    "SuiteKind",
    "SuiteTable",
    "Tool",
    "ToolCallRecord",
    "ToolContext",
    "ToolDef",
    "ToolInputError",
    "ToolOutput",
    "Transcript",
    "named_checks",
    "not_applicable",
]

ENTRY_POINT_GROUP = "evalctl.plugins"


# None when the resource is usable for this suite, else why not (the cases are skipped).
# Paths a resource reads resolve against `suite.path.parent`, never the working directory.
ResourceCheck = Callable[[Settings, Suite], str | None]
# Opens the resource once per suite and run; tools read it from `ctx.resources[name]`.
ResourceOpener = Callable[[Settings, Suite], Any]

ExtensionType = Literal["kind", "tool", "check", "resource", "setting", "provider"]


def failure_text(exc: BaseException) -> str:
    """One line for what plugin (or tool) code raised. Plugin code may raise anything: every
    BaseException but KeyboardInterrupt (Ctrl-C stays an interrupt) becomes a message naming
    the plugin, `SystemExit` and `GeneratorExit` included, never a traceback."""
    if isinstance(exc, SystemExit):
        return f"it called sys.exit({exc.code!r})"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


@dataclass(frozen=True)
class Origin:
    """Where a plugin came from: `builtin`, `entry point` or `evalctl.toml`, and its name
    (the module, or the distribution that declared the entry point)."""

    source: Literal["builtin", "entry point", "evalctl.toml"]
    plugin: str

    def __str__(self) -> str:
        return f"plugin {self.plugin!r} ({self.source})"


@dataclass
class Extension:
    """One registered thing. `value` is the object or the callable that makes it."""

    type: ExtensionType
    name: str
    origin: Origin
    value: Any
    resolved: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


_TYPE_ORDER: tuple[ExtensionType, ...] = (
    "kind",
    "tool",
    "check",
    "resource",
    "setting",
    "provider",
)

# What an object must have to be taken as itself rather than as a factory of one.
_SHAPE: dict[ExtensionType, tuple[str, ...]] = {
    "kind": ("input_model", "expected_model", "checks", "build_prompt", "request_shape"),
    "tool": ("definition", "run"),
    "check": ("type_name", "params_model", "evaluate"),
}


class Registry:
    """The extension points a plugin's `register(registry)` calls."""

    def __init__(self) -> None:
        self._items: dict[tuple[ExtensionType, str], Extension] = {}
        # Scoring runs in worker threads: a factory must run once even when two cases of a
        # run ask for the same check at the same moment.
        self._resolving = threading.Lock()
        # Set by the loader while a plugin's register() runs, so entries know their origin.
        self.current: Origin = Origin("builtin", "evalctl")
        self._judge: tuple[JudgeFactory, Origin] | None = None

    # --- what plugins call ----------------------------------------------------------------

    def add_kind(self, name: str, kind: SuiteKind | Callable[[], SuiteKind]) -> None:
        """A suite kind, or a zero-argument callable returning one."""
        self._add("kind", name, kind)

    def add_tool(self, name: str, tool: Tool | Callable[[], Tool]) -> None:
        """A tool, or a zero-argument callable returning one. Its `definition.name` is what
        the model calls; `name` is what suites list: the two must be the same."""
        self._add("tool", name, tool)

    def add_check(self, name: str, check: Check[Any] | Callable[[], Check[Any]]) -> None:
        """An assertion type, or a zero-argument callable returning one. Its `type_name` is
        what suites write in `type = "..."`; `name` must be the same."""
        self._add("check", name, check)

    def set_judge(self, factory: JudgeFactory) -> None:
        """What makes the run's judge; one plugin may provide it."""
        if not callable(factory):
            raise self._bad("judge", "judge", "the factory must be a callable")
        if self._judge is not None:
            raise self._bad("judge", "judge", f"already provided by {self._judge[1]}")
        # A judge that does not inherit `JudgeService` is adapted, once, here.
        self._judge = (adapted_judge_factory(factory), self.current)

    def add_provider(
        self,
        name: str,
        factory: ProviderFactory | type[Provider],
        traits: TraitsSource | ProviderTraits | None = None,
    ) -> None:
        """A provider: `factory(options)` builds it (import its SDK inside, so listing
        providers costs nothing). What evalctl may know without building it are its traits:
        the class attributes of its `Provider` class, `factory` itself when that is the
        class, else `traits`, the class or a function returning it (called on the first
        lookup, so its module is imported then); or a `ProviderTraits`, for a provider whose
        class carries none (one that does not inherit `Provider`)."""
        if not callable(factory):
            raise self._bad("provider", name, "the factory must be a callable")
        if traits is None:
            if not _is_provider_class(factory):
                raise self._bad(
                    "provider",
                    name,
                    "give the Provider class whose traits apply, or a ProviderTraits",
                )
            traits = factory
        elif isinstance(traits, type):
            if not _is_provider_class(traits):
                raise self._bad("provider", name, "traits must be a Provider class")
        elif not isinstance(traits, ProviderTraits) and not callable(traits):
            raise self._bad(
                "provider",
                name,
                "traits must be a Provider class, a function returning one, or a ProviderTraits",
            )
        if isinstance(traits, ProviderTraits):
            traits = traits_class(name, traits)  # the one form: a class's attributes
        # A provider that does not inherit `Provider` is adapted, once, here.
        self._add("provider", name, adapted_provider_factory(factory), extra={"traits": traits})

    def add_resource(
        self, name: str, check: ResourceCheck, open: ResourceOpener | None = None
    ) -> None:
        """A resource suites can require: its check, and optionally its opener."""
        if not callable(check) or (open is not None and not callable(open)):
            raise self._bad("resource", name, "check and open must be callables")
        self._add("resource", name, check, extra={"open": open})

    def add_setting(self, setting: PluginSetting) -> None:
        """A top-level `evalctl.toml` key (a `PluginSetting`, which also reads it back)."""
        if not isinstance(setting, PluginSetting):
            raise self._bad("setting", str(setting), "not a PluginSetting")
        self._add("setting", setting.name, setting)

    # --- what evalctl calls ---------------------------------------------------------------

    def providers(self) -> list[ProviderSpec]:
        """The registered providers in registration order (detection tries them so)."""
        return [
            ProviderSpec(
                e.name,
                e.value,
                e.extra["traits"],
                "builtin"
                if e.origin.source == "builtin"
                else f"{e.origin.plugin} ({e.origin.source})",
            )
            for e in self._items.values()
            if e.type == "provider"
        ]

    def names(self, type_: ExtensionType) -> list[str]:
        return sorted(name for (t, name) in self._items if t == type_)

    def entries(self) -> list[Extension]:
        return sorted(self._items.values(), key=lambda e: (_TYPE_ORDER.index(e.type), e.name))

    def find(self, type_: ExtensionType, name: str) -> Extension | None:
        return self._items.get((type_, name))

    def origin_of(self, type_: ExtensionType, name: str) -> Origin | None:
        """The plugin that registered `name` (`str()` of it names the plugin), else None."""
        entry = self._items.get((type_, name))
        return None if entry is None else entry.origin

    def kind(self, name: str) -> SuiteKind | None:
        value: SuiteKind | None = self._resolve("kind", name)
        return value

    def tool(self, name: str) -> Tool | None:
        value: Tool | None = self._resolve("tool", name)
        return value

    def check(self, name: str) -> Check[Any] | None:
        value: Check[Any] | None = self._resolve("check", name)
        return value

    def judge(self) -> JudgeFactory | None:
        """The factory of the run's judge, if a plugin provides one."""
        return None if self._judge is None else self._judge[0]

    def resource(self, name: str) -> tuple[ResourceCheck, ResourceOpener | None] | None:
        entry = self._items.get(("resource", name))
        if entry is None:
            return None
        return entry.value, entry.extra["open"]

    # --- internals ------------------------------------------------------------------------

    def _bad(self, type_: str, name: str, why: str) -> BadInputError:
        return BadInputError(f"{self.current}: {type_} {name!r}: {why}")

    def _add(
        self, type_: ExtensionType, name: str, value: Any, extra: dict[str, Any] | None = None
    ) -> None:
        if not isinstance(name, str) or not name:
            raise self._bad(type_, str(name), "the name must be a non-empty string")
        shape = _SHAPE.get(type_)
        if shape is not None and not has_shape(value, shape) and not callable(value):
            raise self._bad(type_, name, f"not a {type_} (needs {', '.join(shape)})")
        existing = self._items.get((type_, name))
        if existing is not None:
            raise self._bad(type_, name, f"already registered by {existing.origin}")
        self._items[(type_, name)] = Extension(type_, name, self.current, value, extra=extra or {})

    def _resolve(self, type_: ExtensionType, name: str) -> Any:
        entry = self._items.get((type_, name))
        if entry is None:
            return None
        with self._resolving:
            return self._resolve_entry(type_, name, entry)

    def _resolve_entry(self, type_: ExtensionType, name: str, entry: Extension) -> Any:
        if not entry.resolved:
            value = entry.value
            shape = _SHAPE[type_]
            if not has_shape(value, shape):
                try:
                    value = value()
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:  # a plugin's factory may raise anything
                    raise BadInputError(
                        f"{entry.origin}: {type_} {name!r} could not be created: "
                        f"{failure_text(exc)}"
                    ) from None
                if not has_shape(value, shape):
                    raise BadInputError(
                        f"{entry.origin}: {type_} {name!r} is not a {type_} "
                        f"(needs {', '.join(shape)})"
                    )
            # The model calls a tool by its definition's name; the spy looks it up by the
            # name suites list, so the two must agree.
            defined = defined_name(value, name)
            if type_ == "tool" and defined != name:
                raise BadInputError(
                    f"{entry.origin}: tool {name!r} is named {defined!r} in its definition"
                )
            # A kind that does not inherit the base class is adapted, once, here.
            if type_ == "kind":
                value = adapt_kind(value)
            if type_ == "check":
                value = adapt_check(value)
            if type_ == "tool":
                value = adapt_tool(value)
            # A check names its type itself; the name it is registered under must agree.
            if type_ == "check" and value.type_name != name:
                raise BadInputError(
                    f"{entry.origin}: check {name!r} names its type {value.type_name!r}"
                )
            entry.value, entry.resolved = value, True
        return entry.value


class PluginSetting:
    """A top-level `evalctl.toml` key a plugin declares (`registry.add_setting(SETTING)`) and
    reads back (`SETTING.get(settings)`): validated as `type_`, `default` when unset."""

    def __init__(self, name: str, type_: Any, default: Any = None, help: str = ""):
        self.name = name
        self.default = default
        self.help = help
        self._adapter: TypeAdapter[Any] = TypeAdapter(type_)

    def validate(self, value: Any, file: Path | None = None) -> Any:
        """The value as `type_`; a BadInputError naming the key (and `file`, the settings
        file it is from) when it is not one, worded as every user file's errors are."""
        try:
            return self._adapter.validate_python(value)
        except ValidationError as exc:
            raise userfiles.validation_error(exc.errors(), file=file, prefix=(self.name,)) from None

    def get(self, settings: Settings) -> Any:
        extras = settings.model_extra or {}
        if self.name not in extras:
            return self.default
        return self.validate(extras[self.name], settings.config_file)


def _is_provider_class(value: object) -> TypeGuard[type[Provider]]:
    """A `Provider` subclass whose traits can be read: `capabilities` a class attribute."""
    return (
        isinstance(value, type)
        and issubclass(value, Provider)
        and isinstance(value.capabilities, frozenset | set)
    )
