"""The `command` backend of `[[suite.tool]]`: a program run per call, the arguments as JSON on
stdin, the result as JSON on stdout. Every failure (cannot start, non-zero exit, timeout, no
JSON, output past the cap) is a tool error the model sees. Paths resolve against the suite
file's directory.

Each call runs under `evalctl.supervise` (the launcher, in a session of its own), with the
scrubbed environment of `evalctl.tools.environment`; when the call ends, for whatever reason,
every process it started is killed and reaped. stdout is read as it comes and never held past the
cap (`max_output_bytes`, else `tool_output_limit`): a command printing without end is
stopped there."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from evalctl import supervise
from evalctl.cases.tooldecl import ToolDecl
from evalctl.tools.base import Tool, ToolContext, ToolFailedError, ToolOutput
from evalctl.tools.environment import tool_environment
from evalctl.tools.output import definition_of, output_limit, output_of, too_large

# At most this much of a failing command's stderr goes back to the model.
_STDERR_TAIL = 500


class CommandTool(Tool):
    """Runs a command: the arguments as JSON on stdin, the result as JSON on stdout."""

    def __init__(self, decl: ToolDecl, suite_dir: Path):
        assert decl.command is not None
        self.definition = definition_of(decl)
        self._decl = decl
        self._argv = resolve_command(decl.command, suite_dir)
        self._cwd = suite_dir
        self._timeout = decl.timeout_s

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        limit = output_limit(self._decl, ctx.settings)
        env = tool_environment(self._decl.env)
        program = self._argv[0]
        if os.sep not in program and shutil.which(program, path=env.get("PATH")) is None:
            raise ToolFailedError(f"cannot start {program}: not found on PATH")
        # The case's time left bounds the call too: a tool must not outlive its case.
        timeout = ctx.call_timeout(self._timeout)
        try:
            done = supervise.run(
                self._argv,
                cwd=self._cwd,
                env=env,
                payload=json.dumps(arguments).encode(),
                timeout=timeout,
                limit=limit,
            )
        except OSError as exc:
            raise ToolFailedError(f"cannot start {program}: {exc.strerror}") from None
        if done.cut == "timeout":
            raise ToolFailedError(f"timed out after {timeout:g}s")
        if done.cut == "too large":
            raise ToolFailedError(too_large(limit))
        if done.cannot_start is not None:
            raise ToolFailedError(f"cannot start {done.cannot_start}")
        stderr = done.stderr.decode("utf-8", errors="replace")
        if done.returncode != 0:
            tail = stderr.strip()[-_STDERR_TAIL:]
            raise ToolFailedError(
                f"exited with status {done.returncode}" + (f": {tail}" if tail else "")
            )
        # Bytes that are not UTF-8 are the tool's bug, not evalctl's: shown as U+FFFD.
        stdout = done.stdout.decode("utf-8", errors="replace")
        try:
            value = json.loads(stdout)
        except json.JSONDecodeError as exc:
            raise ToolFailedError(f"printed no JSON result ({exc.msg})") from None
        except RecursionError:
            raise ToolFailedError("printed JSON nested too deeply to read") from None
        except ValueError as exc:  # an integer of more digits than Python reads
            raise ToolFailedError(f"printed JSON that cannot be read: {exc}") from None
        return output_of(value, limit)


def resolve_command(command: list[str], suite_dir: Path) -> list[str]:
    """argv with a program given as a relative path (`./tools/x`) made absolute; a bare name
    (`python3`) is looked up on PATH when the command runs."""
    program = command[0]
    if os.sep in program and not os.path.isabs(program):
        program = str(suite_dir / program)
    return [program, *command[1:]]


def command_problems(command: list[str], suite_dir: Path) -> list[str]:
    """Whether the command's program can be found. The files its arguments name are checked,
    conservatively, by `evalctl.tools.declared.command_file_problems`."""
    program = resolve_command(command, suite_dir)[0]
    problems = []
    if os.sep in program:
        if not os.path.isfile(program):
            problems.append(f"program not found: {program}")
        elif not os.access(program, os.X_OK):
            problems.append(f"program is not executable: {program}")
    elif shutil.which(program) is None:
        problems.append(f"program {program!r} not found on PATH")
    return problems
