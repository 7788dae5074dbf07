"""Tools a suite declares in `[[suite.tool]]`: the fixture and mock backends, and the choice
of backend (`command` in evalctl.tools.command, `python` in evalctl.tools.python_tool).

All four run through the same `ToolSpy` as built-in tools, so results record each call's
arguments and the value returned (`data.value`). Whatever goes wrong inside one (an unknown
fixture entry, a non-zero exit, a timeout, an exception) is a tool error the model sees, not
a harness error. Paths resolve against the suite file's directory, never the working one.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalctl import userfiles, userpaths
from evalctl.cases.tooldecl import McpDecl, ToolDecl
from evalctl.errors import BadInputError
from evalctl.tools.base import Tool, ToolContext, ToolFailedError, ToolInputError, ToolOutput
from evalctl.tools.command import CommandTool, command_problems
from evalctl.tools.output import definition_of, output_of
from evalctl.tools.python_tool import PythonTool, python_tool_problems


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


def fixture_path(decl: ToolDecl, suite_dir: Path) -> Path:
    """Where the fixture is: inside the suite's project (evalctl.userpaths), or a
    BadInputError naming the field."""
    assert decl.fixture is not None
    return userpaths.inside_project(
        decl.fixture, suite_dir, file=suite_dir, field=f"tool {decl.name}.fixture"
    )


def fixture_key(value: Any) -> str:
    """JSON object keys are strings: the argument 7 picks entry "7", true picks "true"."""
    if isinstance(value, str):
        return value
    return json.dumps(value)


class FixtureTool(Tool):
    """Returns the fixture entry named by the value of argument `key`."""

    def __init__(self, decl: ToolDecl, suite_dir: Path):
        assert decl.fixture is not None and decl.key is not None
        self.definition = definition_of(decl)
        self._key = decl.key
        self._path = fixture_path(decl, suite_dir)
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
        return output_of(entries[entry_key])


class MockTool(Tool):
    """Returns the declaration's `mock` value to every call: a tool whose only job is to be
    called (and recorded), such as one that would file a ticket, needs no backend to stub."""

    def __init__(self, decl: ToolDecl, suite_dir: Path):
        self.definition = definition_of(decl)
        self._value = decl.mock

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return output_of(self._value)


_BACKENDS: dict[str, Callable[[ToolDecl, Path], Tool]] = {
    "fixture": FixtureTool,
    "command": CommandTool,
    "python": PythonTool,
    "mock": MockTool,
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
            read_fixture(fixture_path(decl, suite_dir))
        except BadInputError as exc:
            problems.append(("fixture", exc.detail))
        except ValueError as exc:
            problems.append(("fixture", str(exc)))
        properties = decl.parameters.get("properties")
        if isinstance(properties, dict) and decl.key not in properties:
            known = ", ".join(properties) or "none"
            problems.append(
                ("key", f"{decl.key!r} is not one of the tool's parameters (known: {known})")
            )
    if decl.command is not None:
        problems.extend(("command", m) for m in command_problems(decl.command, suite_dir))
        problems.extend(("command", m) for m in command_file_problems(decl.command, suite_dir))
    if decl.python is not None:
        # Read, never imported: validating a suite runs none of its code.
        problems.extend(("python", m) for m in python_tool_problems(decl.python, suite_dir))
    return problems


def mcp_decl_problems(decl: McpDecl, suite_dir: Path) -> list[tuple[str, str]]:
    """(field, message) for what can be told of a `[[suite.mcp]]` server without starting
    it: its program, the scripts it names, its folder."""
    problems: list[tuple[str, str]] = []
    if decl.command is not None:
        problems.extend(("command", m) for m in command_problems(decl.command, suite_dir))
        problems.extend(("command", m) for m in command_file_problems(decl.command, suite_dir))
    if decl.cwd is not None:
        try:
            folder = userpaths.inside_project(
                decl.cwd, suite_dir, file=suite_dir, field=f"mcp {decl.name}.cwd"
            )
        except BadInputError as exc:
            problems.append(("cwd", exc.message))
        else:
            if not folder.is_dir():
                problems.append(("cwd", f"not a directory: {folder}"))
    return problems


# Programs whose first plain argument is the script they run (`python3 tools/x.py`).
_INTERPRETERS = frozenset(
    ("python", "python3", "sh", "bash", "zsh", "dash", "node", "deno", "bun", "ruby", "perl",
     "php", "lua", "Rscript", "tclsh", "pwsh")
)  # fmt: skip
# After one of these an interpreter runs code given inline (`sh -c '...'`), or a module.
_INLINE_FLAGS = frozenset(("-c", "-e", "-m", "--eval", "-E", "--command"))
# Arguments ending so are taken for scripts wherever they appear. Not data suffixes: a
# `.json` argument may be a file the command writes.
_FILE_SUFFIXES = (".py", ".sh", ".js", ".mjs", ".ts", ".rb", ".pl", ".php", ".lua", ".r", ".R")


def _interpreter(program: str) -> bool:
    name = Path(program).name
    # python3.12, node18: the version does not change what the arguments mean
    return name in _INTERPRETERS or name.rstrip("0123456789.") in _INTERPRETERS


def _plausible_path(arg: str) -> bool:
    """A relative file path and nothing else: no spaces or newlines (a script given inline),
    no scheme (a URL), not an option, not absolute (checked where it runs, not guessed)."""
    return (
        bool(arg)
        and not any(c.isspace() for c in arg)
        and "://" not in arg
        and not arg.startswith(("-", "/", "~", "$"))
        and not any(c in arg for c in "<>|;&*?'\"`=")
    )


def command_file_problems(command: list[str], suite_dir: Path) -> list[str]:
    """Files a command names that are missing from the suite's directory. Conservative: an
    argument is taken for a file only when it looks like a relative path and is either an
    interpreter's script (its first plain argument, unless `-c`/`-e`/`-m` gave the code
    inline) or ends in a script suffix. A false alarm would refuse a good suite;
    a miss only becomes a tool error at run time."""
    named: list[str] = []
    interpreter = _interpreter(command[0])
    script_seen = False
    for index, arg in enumerate(command[1:], start=1):
        if interpreter and not script_seen:
            if arg in _INLINE_FLAGS:
                break  # the code is inline; what follows are its arguments
            if arg.startswith("-"):
                continue
            script_seen = True
            if _plausible_path(arg) and ("/" in arg or arg.endswith(_FILE_SUFFIXES)):
                named.append(arg)
            continue
        previous = command[index - 1]
        if previous in _INLINE_FLAGS:
            continue
        if _plausible_path(arg) and arg.endswith(_FILE_SUFFIXES):
            named.append(arg)
    return [
        f"file not found: {arg} (resolved against {suite_dir})"
        for arg in named
        if not (suite_dir / arg).exists()
    ]
