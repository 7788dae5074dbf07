"""Tools a suite declares in `[[suite.tool]]`: fixture, command and python backends.

All three run through the same `ToolSpy` as built-in tools, so results record each call's
arguments and the value returned (`data.value`). Whatever goes wrong inside one (an unknown
fixture entry, a non-zero exit, a timeout, an exception) is a tool error the model sees, not
a harness error. Paths resolve against the suite file's directory, never the working one.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from evalctl import userfiles
from evalctl.cases.tooldecl import ToolDecl
from evalctl.chat import ToolDef
from evalctl.errors import BadInputError
from evalctl.tools.base import (
    Tool,
    ToolContext,
    ToolFailedError,
    ToolInputError,
    ToolOutput,
    to_json,
)

# Arguments a command names by a path (a script, a data file) are checked by `validate`.
_SCRIPT_SUFFIXES = (".py", ".sh", ".js", ".rb", ".pl", ".json", ".toml", ".txt")
# At most this much of a failing command's stderr goes back to the model.
_STDERR_TAIL = 500


def _output(value: Any) -> ToolOutput:
    try:
        content = to_json(value)
    except (TypeError, ValueError) as exc:
        raise ToolFailedError(f"the tool returned a value that is not JSON: {exc}") from None
    return ToolOutput(content=content, data={"value": value})


def _definition(decl: ToolDecl) -> ToolDef:
    return ToolDef(name=decl.name, description=decl.description, parameters=decl.parameters)


def read_fixture(path: Path) -> dict[str, Any]:
    """The fixture's JSON object; ValueError says why it is not one."""
    if not path.exists():
        raise ValueError(f"fixture file not found: {path}")
    try:
        # The one reader of user files: decoding, nesting, directories, permissions.
        data = userfiles.read_json(path, what="fixture file")
    except BadInputError as exc:
        raise ValueError(f"fixture {exc.message}") from None
    if not isinstance(data, dict):
        raise ValueError(f"fixture {path} must hold a JSON object keyed by `key` values")
    return data


def fixture_key(value: Any) -> str:
    """JSON object keys are strings: the argument 7 picks entry "7", true picks "true"."""
    if isinstance(value, str):
        return value
    return json.dumps(value)


class FixtureTool:
    """Returns the fixture entry named by the value of argument `key`."""

    def __init__(self, decl: ToolDecl, suite_dir: Path):
        assert decl.fixture is not None and decl.key is not None
        self.definition = _definition(decl)
        self._key = decl.key
        self._path = suite_dir / decl.fixture
        self._entries: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def _load(self) -> dict[str, Any]:
        with self._lock:
            if self._entries is None:
                try:
                    self._entries = read_fixture(self._path)
                except ValueError as exc:
                    # `validate` checks the file; it changed or vanished since.
                    raise BadInputError(str(exc), field=f"tool {self.definition.name}") from None
            return self._entries

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        if self._key not in arguments:
            raise ToolInputError(f"missing argument {self._key!r}")
        value = arguments[self._key]
        entries = self._load()
        entry_key = fixture_key(value)
        if entry_key not in entries:
            raise ToolFailedError(f"no result for {self._key}={value!r}")
        return _output(entries[entry_key])


def _kill_group(proc: subprocess.Popen[str]) -> None:
    # The command may have started children (a shell script): end the whole group, or a
    # grandchild holding stdout open would keep us waiting.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


class CommandTool:
    """Runs a command: the arguments as JSON on stdin, the result as JSON on stdout."""

    def __init__(self, decl: ToolDecl, suite_dir: Path):
        assert decl.command is not None
        self.definition = _definition(decl)
        self._argv = resolve_command(decl.command, suite_dir)
        self._cwd = suite_dir
        self._timeout = decl.timeout_s

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        try:
            proc = subprocess.Popen(
                self._argv,
                cwd=self._cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
            )
        except OSError as exc:
            raise ToolFailedError(f"cannot start {self._argv[0]}: {exc.strerror}") from None
        try:
            stdout, stderr = proc.communicate(json.dumps(arguments), timeout=self._timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            proc.communicate()
            raise ToolFailedError(f"timed out after {self._timeout:g}s") from None
        finally:
            if proc.poll() is None:
                _kill_group(proc)
                proc.wait()
        if proc.returncode != 0:
            tail = stderr.strip()[-_STDERR_TAIL:]
            raise ToolFailedError(
                f"exited with status {proc.returncode}" + (f": {tail}" if tail else "")
            )
        try:
            value = json.loads(stdout)
        except json.JSONDecodeError as exc:
            raise ToolFailedError(f"printed no JSON result ({exc.msg})") from None
        return _output(value)


def resolve_command(command: list[str], suite_dir: Path) -> list[str]:
    """argv with a program given as a relative path (`./tools/x`) made absolute; a bare name
    (`python3`) is looked up on PATH when the command runs."""
    program = command[0]
    if os.sep in program and not os.path.isabs(program):
        program = str(suite_dir / program)
    return [program, *command[1:]]


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
        self.definition = _definition(decl)
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
        return _output(box.get("value"))


_BACKENDS: dict[str, Callable[[ToolDecl, Path], Tool]] = {
    "fixture": FixtureTool,
    "command": CommandTool,
    "python": PythonTool,
}


def build_tool(decl: ToolDecl, suite_dir: Path) -> Tool:
    return _BACKENDS[decl.backend](decl, suite_dir)


def declared_tool_problems(decl: ToolDecl, suite_dir: Path) -> list[tuple[str, str]]:
    """(field, message) for everything `run` would trip over in one declaration."""
    from evalctl.json_schema import schema_problem

    problems: list[tuple[str, str]] = []
    problem = schema_problem(decl.parameters)
    if problem:
        problems.append(("parameters", problem))
    if decl.fixture is not None:
        try:
            read_fixture(suite_dir / decl.fixture)
        except ValueError as exc:
            problems.append(("fixture", str(exc)))
        properties = decl.parameters.get("properties")
        if isinstance(properties, dict) and decl.key not in properties:
            known = ", ".join(properties) or "none"
            problems.append(
                ("key", f"{decl.key!r} is not one of the tool's parameters (known: {known})")
            )
    if decl.command is not None:
        problems.extend(("command", m) for m in _command_problems(decl.command, suite_dir))
    if decl.python is not None:
        try:
            resolve_function(decl.python, suite_dir)
        except ValueError as exc:
            problems.append(("python", str(exc)))
    return problems


def _command_problems(command: list[str], suite_dir: Path) -> list[str]:
    program = resolve_command(command, suite_dir)[0]
    problems = []
    if os.sep in program:
        if not os.path.isfile(program):
            problems.append(f"program not found: {program}")
        elif not os.access(program, os.X_OK):
            problems.append(f"program is not executable: {program}")
    elif shutil.which(program) is None:
        problems.append(f"program {program!r} not found on PATH")
    for arg in command[1:]:
        looks_like_path = os.sep in arg or arg.endswith(_SCRIPT_SUFFIXES)
        if looks_like_path and not arg.startswith("-") and not (suite_dir / arg).exists():
            problems.append(f"file not found: {arg} (resolved against {suite_dir})")
    return problems
