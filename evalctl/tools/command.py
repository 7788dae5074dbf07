"""The `command` backend of `[[suite.tool]]`: a program run per call, the arguments as JSON on
stdin, the result as JSON on stdout. Every failure (cannot start, non-zero exit, timeout, no
JSON) is a tool error the model sees. Paths resolve against the suite file's directory."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

from evalctl.cases.tooldecl import ToolDecl
from evalctl.tools.base import ToolContext, ToolFailedError, ToolOutput
from evalctl.tools.output import definition_of, output_of

# Arguments a command names by a path (a script, a data file) are checked by `validate`.
_SCRIPT_SUFFIXES = (".py", ".sh", ".js", ".rb", ".pl", ".json", ".toml", ".txt")
# At most this much of a failing command's stderr goes back to the model.
_STDERR_TAIL = 500


def _kill_group(proc: subprocess.Popen[str]) -> None:
    # The command may have started children (a shell script): end the whole group, or a
    # grandchild holding stdout open would keep us waiting.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


class CommandTool:
    """Runs a command: the arguments as JSON on stdin, the result as JSON on stdout."""

    def __init__(self, decl: ToolDecl, suite_dir: Path):
        assert decl.command is not None
        self.definition = definition_of(decl)
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
        return output_of(value)


def resolve_command(command: list[str], suite_dir: Path) -> list[str]:
    """argv with a program given as a relative path (`./tools/x`) made absolute; a bare name
    (`python3`) is looked up on PATH when the command runs."""
    program = command[0]
    if os.sep in program and not os.path.isabs(program):
        program = str(suite_dir / program)
    return [program, *command[1:]]


def command_problems(command: list[str], suite_dir: Path) -> list[str]:
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
