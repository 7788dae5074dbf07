"""Finding and loading plugins into the one registry of the process.

Order: the built-ins (`evalctl.builtin_plugins`: the `assert` kind and its assertion types,
the built-in suites, the judge), then installed packages' entry points in the
`evalctl.plugins` group, then the `plugins` of `evalctl.toml` (handed over by
`configure(settings)`). Nothing is imported until something asks the registry, so commands
that need no suite (and `evalctl --help`) never load a plugin. A plugin that fails to import
or to register is a `BadInputError` naming it: exit 2, no traceback. That includes one that
calls `sys.exit()` while it is imported or registers: `SystemExit` would otherwise end evalctl
with the plugin's code (0 included), silently and with no results; and one that raises any
other `BaseException` (`GeneratorExit` included). Only Ctrl-C stays an interrupt.

The built-ins are imported through `evalctl.builtin_plugins`, the one module that names them;
third-party plugins are imported by name. Lookups by the runner and the case loader go
through `get_kind`, `get_tools`, `get_check`, `make_judge` and friends.
"""

from __future__ import annotations

import importlib
import sys
import threading
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from evalctl.builtin_plugins import BUILTIN_PLUGINS
from evalctl.config import Settings
from evalctl.errors import BadInputError
from evalctl.plugin import (
    ENTRY_POINT_GROUP,
    Check,
    Origin,
    PluginSetting,
    Registry,
    failure_text,
)
from evalctl.providers.registry import ProviderSpec, use_registered
from evalctl.providers.registry import register as register_builtin_providers
from evalctl.scoring.declared import CheckTypes
from evalctl.scoring.judging import JudgeService, JudgeSetup
from evalctl.scoring.kinds import SuiteKind
from evalctl.tools.base import Tool


@dataclass(frozen=True)
class LoadedPlugin:
    origin: Origin
    target: str  # what was loaded: "module" or "module:callable"


@dataclass
class _State:
    registry: Registry | None = None
    loaded: list[LoadedPlugin] = field(default_factory=list)
    # evalctl.toml plugins not yet imported, with the file that names them.
    pending: list[tuple[str, Path, Path]] = field(default_factory=list)  # module, dir, file
    configured: set[str] = field(default_factory=set)


_state = _State()
_lock = threading.RLock()


def _registered_providers() -> list[ProviderSpec]:
    return registry().providers()


# Provider lookups (`--provider NAME`, detection, `evalctl providers`) sit in a lower layer:
# once this module is imported they read the providers plugins registered from here.
use_registered(_registered_providers)


def configure(settings: Settings) -> None:
    """Take the `plugins` of the settings' `evalctl.toml` (imported on the registry's first
    use), and check its other keys against the settings plugins declare."""
    config_file = settings.config_file
    if config_file is None:
        return
    with _lock:
        for module in settings.plugins:
            if module not in _state.configured:
                _state.configured.add(module)
                _state.pending.append((module, config_file.parent, config_file))
    extras = settings.model_extra or {}
    if extras:
        reg = registry()
        for key, value in extras.items():
            entry = reg.find("setting", key)
            if entry is None:
                known = ", ".join(reg.names("setting"))
                raise BadInputError(
                    "unknown key" + (f" (plugin settings: {known})" if known else ""),
                    file=str(config_file),
                    field=key,
                )
            declared: PluginSetting = entry.value
            declared.validate(value, config_file)


def get_kind(name: str) -> SuiteKind | None:
    """The kind registered under `name`, else None."""
    return registry().kind(name)


def kind_names() -> list[str]:
    return registry().names("kind")


def tool_names() -> list[str]:
    return registry().names("tool")


def get_tool(name: str) -> Tool:
    tool = registry().tool(name)
    if tool is None:
        raise BadInputError(
            f"unknown tool {name!r} (known: {', '.join(tool_names()) or 'none'})",
            field="suite.tools",
        )
    return tool


def get_tools(names: list[str]) -> dict[str, Tool]:
    return {name: get_tool(name) for name in names}


def check_names() -> list[str]:
    """Assertion types plugins registered (`add_check`)."""
    return registry().names("check")


def get_check(name: str) -> Check[Any] | None:
    """The assertion type registered under `name`, else None."""
    return registry().check(name)


def check_origin(name: str) -> Origin | None:
    """The plugin that registered the assertion type `name` (for naming it when the check
    fails), else None."""
    return registry().origin_of("check", name)


def check_types() -> CheckTypes:
    """The registered assertion types, for the suite loader's parsing of `[[case.assert]]`."""
    return CheckTypes(lookup=get_check, names=check_names)


def make_judge(setup: JudgeSetup) -> JudgeService | None:
    """The run's judge, made by the plugin that provides one (the built-in `evalctl.judge`);
    None when none does (a `judge` check then says so)."""
    factory = registry().judge()
    return None if factory is None else factory(setup)


def registry() -> Registry:
    """The process's registry, loading whatever plugins are not loaded yet."""
    with _lock:
        if _state.registry is None:
            fresh = Registry()
            loaded: list[LoadedPlugin] = []
            _load_builtins(fresh, loaded)
            _load_entry_points(fresh, loaded)
            _state.registry, _state.loaded = fresh, loaded
        while _state.pending:
            module, project_dir, config_file = _state.pending[0]
            _load_configured(_state.registry, module, project_dir, config_file)
            _state.pending.pop(0)
        return _state.registry


def loaded_plugins() -> list[LoadedPlugin]:
    registry()
    return list(_state.loaded)


def reset() -> None:
    """Forget every loaded plugin (tests)."""
    global _state
    with _lock:
        _state = _State()


def _load_builtins(reg: Registry, loaded: list[LoadedPlugin]) -> None:
    # The built-in providers first: detection tries them before any plugin's.
    origin = Origin("builtin", "evalctl.providers")
    _register(reg, origin, register_builtin_providers, "evalctl.providers", loaded)
    for name, register in BUILTIN_PLUGINS:
        _register(reg, Origin("builtin", name), register, name, loaded)


def _load_entry_points(reg: Registry, loaded: list[LoadedPlugin]) -> None:
    seen: set[tuple[str, str]] = set()
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        # The same distribution on sys.path twice lists its entry points twice.
        if (ep.name, ep.value) in seen:
            continue
        seen.add((ep.name, ep.value))
        dist = ep.dist.name if ep.dist is not None else ep.name
        origin = Origin("entry point", dist)
        try:
            obj = ep.load()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # a plugin's import may raise anything
            raise BadInputError(
                f"{origin}: entry point {ep.name} = {ep.value!r} cannot be loaded: "
                f"{failure_text(exc)}",
                hint="fix or uninstall that package",
            ) from None
        _register(reg, origin, obj, ep.value, loaded)


def _load_configured(reg: Registry, target: str, project_dir: Path, config_file: Path) -> None:
    origin = Origin("evalctl.toml", target)
    module_name, _, attr = target.partition(":")
    # The project directory comes first: a project's own plugin module wins over sys.path.
    root = str(project_dir.resolve())
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        obj: Any = importlib.import_module(module_name)
        if attr:
            obj = getattr(obj, attr)
    except ModuleNotFoundError as exc:
        if exc.name != module_name.split(".")[0] and exc.name != module_name:
            raise _config_error(config_file, origin, exc) from None
        raise BadInputError(
            f"{origin}: no module {module_name!r} in {root} or on sys.path",
            file=str(config_file),
            field="plugins",
        ) from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # a plugin's import may raise anything, GeneratorExit too
        raise _config_error(config_file, origin, exc) from None
    try:
        _register(reg, origin, obj, target, _state.loaded)
    except BadInputError as exc:
        raise BadInputError(exc.message, file=str(config_file), field="plugins") from None


def _config_error(config_file: Path, origin: Origin, exc: BaseException) -> BadInputError:
    return BadInputError(
        f"{origin} cannot be imported: {failure_text(exc)}",
        file=str(config_file),
        field="plugins",
    )


def _register(
    reg: Registry, origin: Origin, obj: Any, target: str, loaded: list[LoadedPlugin]
) -> None:
    register = getattr(obj, "register", None) if isinstance(obj, ModuleType) else obj
    if not callable(register):
        raise BadInputError(f"{origin}: {target!r} has no register(registry) function")
    reg.current = origin
    try:
        register(reg)
    except (BadInputError, KeyboardInterrupt):
        raise
    # A plugin's register() may raise anything: GeneratorExit and other BaseExceptions too,
    # which would otherwise end evalctl with a traceback and exit 1. Ctrl-C stays an interrupt.
    except BaseException as exc:
        raise BadInputError(f"{origin}: register() failed: {failure_text(exc)}") from None
    finally:
        reg.current = Origin("builtin", "evalctl")
    loaded.append(LoadedPlugin(origin, target))
