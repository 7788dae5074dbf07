"""The `python` backend of `[[suite.tool]]`: `module:function(**arguments)` called per call, its
return value the result. The module is looked up in the suite file's directory first. A
failure inside the function is a tool error the model sees."""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from evalctl.cases.tooldecl import ToolDecl
from evalctl.errors import BadInputError
from evalctl.tools.base import ToolContext, ToolFailedError, ToolOutput
from evalctl.tools.output import definition_of, output_of

_IMPORT_LOCK = threading.Lock()


def resolve_function(spec: str, suite_dir: Path) -> Callable[..., Any]:
    """`module:function`, the module looked up in the suite's directory first, then sys.path.

    ValueError says what is wrong, for `validate` and the runner alike.
    """
    module_name, func_name = spec.split(":")
    with _IMPORT_LOCK:
        # Files written since start-up (a suite made by a test, `evalctl init`) must be seen.
        importlib.invalidate_caches()
        sys.path.insert(0, str(suite_dir))
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
                raise ValueError(
                    f"module {module_name!r} not found in {suite_dir} or on sys.path"
                ) from None
            raise ValueError(f"importing {module_name!r} failed: {exc}") from None
        except Exception as exc:
            raise ValueError(
                f"importing {module_name!r} failed: {type(exc).__name__}: {exc}"
            ) from None
        finally:
            sys.path.remove(str(suite_dir))
    _check_origin(module, module_name, suite_dir)
    func = getattr(module, func_name, None)
    if func is None:
        raise ValueError(f"module {module_name!r} has no attribute {func_name!r}")
    if not callable(func):
        raise ValueError(f"{spec!r} is not callable")
    return func  # type: ignore[no-any-return]


def _check_origin(module: ModuleType, module_name: str, suite_dir: Path) -> None:
    """Python imports a module name once per process: if this suite has its own `mytools`
    but another suite's `mytools` was imported first, say so rather than call the wrong one."""
    top = module_name.split(".")[0]
    local = suite_dir / top
    if not (local.is_dir() or local.with_suffix(".py").is_file()):
        return
    # A namespace package (no __init__.py) has no __file__, only __path__ entries.
    file = getattr(module, "__file__", None)
    places = [Path(file)] if file else [Path(p) for p in getattr(module, "__path__", [])]
    if places and not any(p.resolve().is_relative_to(suite_dir.resolve()) for p in places):
        raise ValueError(
            f"module {module_name!r} is already loaded from {places[0]}, not from "
            f"{suite_dir}: give one of the two a different name"
        )


class PythonTool:
    """Calls `module:function(**arguments)`; its return value is the result."""

    def __init__(self, decl: ToolDecl, suite_dir: Path):
        assert decl.python is not None
        self.definition = definition_of(decl)
        self._spec = decl.python
        self._suite_dir = suite_dir
        self._timeout = decl.timeout_s
        self._func: Callable[..., Any] | None = None

    def _function(self) -> Callable[..., Any]:
        if self._func is None:
            try:
                self._func = resolve_function(self._spec, self._suite_dir)
            except ValueError as exc:
                raise BadInputError(str(exc), field=f"tool {self.definition.name}") from None
        return self._func

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        func = self._function()
        box: dict[str, Any] = {}

        def call() -> None:
            try:
                box["value"] = func(**arguments)
            except Exception as exc:  # the tool's own failure: the model is told
                box["error"] = exc

        # A daemon thread: a function that never returns must not hold the run's exit.
        worker = threading.Thread(target=call, name=f"tool-{self.definition.name}", daemon=True)
        worker.start()
        worker.join(self._timeout)
        if worker.is_alive():
            raise ToolFailedError(f"timed out after {self._timeout:g}s")
        if "error" in box:
            exc = box["error"]
            raise ToolFailedError(f"{type(exc).__name__}: {exc}")
        return output_of(box.get("value"))
