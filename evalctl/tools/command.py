"""The `command` backend of `[[suite.tool]]`: a program run per call, the arguments as JSON on
stdin, the result as JSON on stdout. Every failure (cannot start, non-zero exit, timeout, no
JSON, output past the cap) is a tool error the model sees. Paths resolve against the suite
file's directory.

Each call runs under `evalctl.tools.launch`, in a session of its own, with the scrubbed
environment of `evalctl.tools.environment`; when the call ends, for whatever reason, every
process it started is killed and reaped. stdout is read as it comes and never held past the
cap (`max_output_bytes`, else `tool_output_limit`): a command printing without end is
stopped there."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from evalctl.cases.tooldecl import ToolDecl
from evalctl.tools import launch
from evalctl.tools.base import ToolContext, ToolFailedError, ToolOutput
from evalctl.tools.environment import tool_environment
from evalctl.tools.output import definition_of, output_limit, output_of, too_large

# At most this much of a failing command's stderr goes back to the model.
_STDERR_TAIL = 500
# Only stderr's tail is ever shown, so only that much is kept while reading.
_STDERR_KEEP = 8192
_CHUNK = 65536
# The launcher ends the command's processes within moments of SIGTERM; if it ever does not,
# its own group is killed after this long rather than waiting on it.
_LAUNCHER_GRACE_S = 10.0
_LAUNCHER = str(Path(launch.__file__).resolve())


class _Exchange:
    """One call's pipes: the arguments written, stdout read up to the cap, stderr's tail kept."""

    def __init__(self, proc: subprocess.Popen[bytes], payload: bytes, limit: int):
        self.proc = proc
        self.limit = limit
        self.stdout = bytearray()
        self.stderr = bytearray()
        self._pending = memoryview(payload)

    def run(self, timeout: float) -> str | None:
        """Until the command's pipes close: None, or why it was cut short
        ("timeout", "too large")."""
        proc = self.proc
        assert proc.stdin and proc.stdout and proc.stderr
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout.fileno(), selectors.EVENT_READ, self.stdout)
            sel.register(proc.stderr.fileno(), selectors.EVENT_READ, self.stderr)
            if self._pending:
                os.set_blocking(proc.stdin.fileno(), False)
                sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, None)
            else:
                proc.stdin.close()
            while len(sel.get_map()) > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return "timeout"
                for key, _ in sel.select(remaining):
                    if key.data is None:
                        self._write(sel, key.fd)
                        continue
                    chunk = os.read(key.fd, _CHUNK)
                    if not chunk:
                        sel.unregister(key.fd)
                    elif key.data is self.stdout:
                        self.stdout += chunk
                        if len(self.stdout) > self.limit:
                            return "too large"
                    else:
                        self.stderr += chunk
                        del self.stderr[:-_STDERR_KEEP]
        return None

    def _write(self, sel: selectors.BaseSelector, fd: int) -> None:
        try:
            written = os.write(fd, self._pending[:_CHUNK])
        except BlockingIOError:
            return
        except BrokenPipeError:
            # The command exited (or closed stdin) without reading all of it: its business.
            written = len(self._pending)
        self._pending = self._pending[written:]
        if not self._pending:
            sel.unregister(fd)
            assert self.proc.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()


def _sweep(call: str) -> None:
    """Kill what a launcher that died before cleaning up (SIGKILLed by someone, the OOM
    killer) left running: every process still carrying the call's token."""
    # A few passes: one may fork between the scan and the kill. A killed process turns
    # zombie, whose environment reads empty, so it is not found again.
    for _ in range(10):
        left = launch.marked(call)
        if not left:
            return
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End the launcher, which ends everything the command started, then reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(_LAUNCHER_GRACE_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class CommandTool:
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
        env[launch.PARENT_ENV] = str(os.getpid())
        call = env[launch.CALL_ENV] = uuid.uuid4().hex
        try:
            # Its own session: the command gets no terminal and none of evalctl's signals; the
            # launcher (evalctl.tools.launch) cleans up after it, whatever it started.
            proc = subprocess.Popen(
                [sys.executable, "-I", "-S", _LAUNCHER, *self._argv],
                cwd=self._cwd,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise ToolFailedError(f"cannot start {program}: {exc.strerror}") from None
        exchange = _Exchange(proc, json.dumps(arguments).encode(), limit)
        # The case's time left bounds the call too: a tool must not outlive its case.
        timeout = ctx.call_timeout(self._timeout)
        try:
            cut = exchange.run(timeout)
        finally:
            _stop(proc)
            if proc.returncode is not None and proc.returncode < 0:
                # The launcher ended by a signal: maybe before it could clean up.
                _sweep(call)
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                if pipe is not None:
                    with contextlib.suppress(OSError):
                        pipe.close()
        if cut == "timeout":
            raise ToolFailedError(f"timed out after {timeout:g}s")
        if cut == "too large":
            raise ToolFailedError(too_large(limit))
        stderr = exchange.stderr.decode("utf-8", errors="replace")
        if launch.CANNOT_START in stderr:
            reason = stderr[stderr.index(launch.CANNOT_START) + len(launch.CANNOT_START) :]
            raise ToolFailedError(f"cannot start {reason.strip()}")
        if proc.returncode != 0:
            tail = stderr.strip()[-_STDERR_TAIL:]
            raise ToolFailedError(
                f"exited with status {proc.returncode}" + (f": {tail}" if tail else "")
            )
        # Bytes that are not UTF-8 are the tool's bug, not evalctl's: shown as U+FFFD.
        stdout = exchange.stdout.decode("utf-8", errors="replace")
        try:
            value = json.loads(stdout)
        except json.JSONDecodeError as exc:
            raise ToolFailedError(f"printed no JSON result ({exc.msg})") from None
        except RecursionError:
            raise ToolFailedError("printed JSON nested too deeply to read") from None
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
