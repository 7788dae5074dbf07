"""The `python` backend of `[[suite.tool]]`: `module:function(**arguments)` called per call, its
return value the result. The module is looked up in the suite file's directory first.

The function runs in a worker process of its own (evalctl.tools.pyworker), started on the
first call and kept for the run, so nothing it does reaches evalctl: `os.chdir`, `sys.exit`,
`print()`, a C call that never returns. A call that overruns (the tool's `timeout_s`, or the
time left to the case) kills the worker; the next call starts a fresh one. Every failure is a
tool error the model sees. The worker ends with the run, or when evalctl dies (its stdin
closes).

`python_tool_problems` checks a declaration for `validate` without running any of its code.
"""

from __future__ import annotations

import ast
import atexit
import contextlib
import importlib.machinery
import json
import os
import select
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from evalctl import userfiles
from evalctl.cases.tooldecl import ToolDecl
from evalctl.errors import BadInputError
from evalctl.tools.base import Tool, ToolContext, ToolFailedError, ToolOutput
from evalctl.tools.environment import tool_environment
from evalctl.tools.output import (
    MAX_VALUE_NESTING,
    definition_of,
    output_limit,
    output_of,
    too_large,
)

_WORKER = Path(__file__).with_name("pyworker.py")
# At most this much of the tool's own output (print, warnings) is quoted in a tool error,
# and only a little more of it is ever kept: a tool printing without end costs nothing.
_LOG_TAIL = 500
_LOG_KEEP = 8192
# Starting an interpreter and importing the tool's module is not the call's time: on a busy
# machine it can take seconds. A module that never finishes importing still ends here.
_START_TIMEOUT_S = 60.0
# The reply's own bytes around the value (`{"ok": true, "value": ...}`), or an error message.
_REPLY_OVERHEAD = 64 * 1024


class _Worker:
    """One worker process: the pipes to it, and the tail of what the tool printed (its stdout
    and stderr both go to the worker's stderr)."""

    def __init__(self, spec: str, suite_dir: Path, env: dict[str, str]):
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(_WORKER),
                spec,
                str(suite_dir),
                str(MAX_VALUE_NESTING),
                str(os.getpid()),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # The scrubbed environment every tool gets (evalctl.tools.environment).
            env=env,
            # Its own session: Ctrl-C at the terminal interrupts evalctl, which then ends
            # the worker; it must not land in the middle of the tool's call.
            start_new_session=True,
        )
        self._buffer = b""
        self._log = bytearray()
        _LIVE.add(self)

    def request(
        self, message: dict[str, Any] | None, timeout: float, max_bytes: int
    ) -> dict[str, Any]:
        """Send `message` (None: only read) and the reply; TimeoutError, EOFError, and
        OverflowError for a reply longer than `max_bytes`."""
        assert self.proc.stdin is not None
        if message is not None:
            try:
                self.proc.stdin.write(json.dumps(message).encode() + b"\n")
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError):
                raise EOFError from None
        line = self._read_line(timeout, max_bytes)
        try:
            reply: dict[str, Any] = json.loads(line)
        except RecursionError:
            raise ValueError("the reply is nested too deep") from None
        return reply

    def _read_line(self, timeout: float, max_bytes: int) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd, *self._log_fds()], [], [], left)
            if fd not in ready:
                self._read_log(ready)
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise EOFError
            self._buffer += chunk
            if len(self._buffer) > max_bytes:
                # Never held past the cap: a tool returning gigabytes is stopped here.
                raise OverflowError
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _log_fds(self) -> list[int]:
        stderr = self.proc.stderr
        return [] if stderr is None or stderr.closed else [stderr.fileno()]

    def _read_log(self, ready: list[int]) -> None:
        """Read what the tool printed (read, so that it never blocks on a full pipe), keeping
        only the tail."""
        stderr = self.proc.stderr
        if stderr is None or stderr.closed or stderr.fileno() not in ready:
            return
        chunk = os.read(stderr.fileno(), 1 << 16)
        if not chunk:
            stderr.close()
            return
        self._log += chunk
        del self._log[:-_LOG_KEEP]

    def log_tail(self) -> str:
        """The end of what the tool printed, once its process has ended."""
        while self._log_fds():
            ready, _, _ = select.select(self._log_fds(), [], [], 1.0)
            if not ready:  # a process the tool started still holds the pipe open
                break
            self._read_log(ready)
        return bytes(self._log[-_LOG_TAIL:]).decode("utf-8", "replace").strip()

    def exit_status(self) -> int | None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            return self.proc.wait(timeout=5)
        return None

    def stop(self) -> None:
        """SIGKILL and reap: a worker stuck in a C call ignores anything gentler."""
        _LIVE.discard(self)
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        self.proc.wait()


# Every worker not yet stopped, so that none outlives evalctl's own exit.
_LIVE: weakref.WeakSet[_Worker] = weakref.WeakSet()


@atexit.register
def stop_all_workers() -> None:
    """Stop every python tool worker of this process (the end of a run, or of evalctl)."""
    for worker in list(_LIVE):
        worker.stop()


def _stop_workers(idle: list[_Worker], lock: threading.Lock) -> None:
    with lock:
        workers, idle[:] = list(idle), []
    for worker in workers:
        worker.stop()


class PythonTool(Tool):
    """Calls `module:function(**arguments)` in a worker process; its return value is the
    result. Cases that run at once each get a worker of their own."""

    def __init__(self, decl: ToolDecl, suite_dir: Path):
        assert decl.python is not None
        self.definition = definition_of(decl)
        self._decl = decl
        self._spec = decl.python
        self._suite_dir = suite_dir
        self._timeout = decl.timeout_s
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        # The workers end when the tool is dropped (the run is over), at the latest at exit.
        self._finalizer = weakref.finalize(self, _stop_workers, self._idle, self._lock)

    def close(self) -> None:
        """Stop this tool's idle workers (one in a call stops when its call ends)."""
        _stop_workers(self._idle, self._lock)

    def _take(self, ctx: ToolContext) -> _Worker:
        with self._lock:
            while self._idle:
                worker = self._idle.pop()
                if worker.proc.poll() is None:
                    return worker
                worker.stop()
        # Not the call's timeout (a 0.5 s tool may take longer to import), but never past
        # the case's own time.
        left = ctx.time_left()
        start_timeout = _START_TIMEOUT_S if left is None else min(_START_TIMEOUT_S, left)
        worker = _Worker(self._spec, self._suite_dir, tool_environment(self._decl.env))
        try:
            ready = worker.request(None, start_timeout, _REPLY_OVERHEAD)
        except TimeoutError:
            worker.stop()
            raise ToolFailedError(
                f"importing {self._spec!r} did not finish in {start_timeout:g}s"
            ) from None
        except (EOFError, ValueError, OverflowError):
            raise self._died(worker, "while importing its module") from None
        except BaseException:
            worker.stop()
            raise
        if not ready.get("ok"):
            worker.stop()
            raise ToolFailedError(str(ready.get("error")))
        return worker

    def _died(self, worker: _Worker, when: str) -> ToolFailedError:
        status = worker.exit_status()
        tail = worker.log_tail()
        worker.stop()
        how = f"with status {status}" if status is not None else "unexpectedly"
        return ToolFailedError(
            f"the tool's process ended {how} {when}" + (f": {tail}" if tail else "")
        )

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        # The case's deadline bounds the call too: a tool must not outlive its case.
        timeout = ctx.call_timeout(self._timeout)
        if timeout <= 0:
            raise ToolFailedError("timed out: the case has no time left")
        limit = output_limit(self._decl, ctx.settings)
        worker = self._take(ctx)
        try:
            reply = worker.request({"arguments": arguments}, timeout, limit + _REPLY_OVERHEAD)
        except TimeoutError:
            worker.stop()
            raise ToolFailedError(f"timed out after {timeout:g}s") from None
        except OverflowError:
            worker.stop()
            raise ToolFailedError(too_large(limit)) from None
        except (EOFError, ValueError):
            raise self._died(worker, "during the call") from None
        except BaseException:
            # Ctrl-C (or SIGTERM) while the call runs: its worker is in no known state.
            worker.stop()
            raise
        with self._lock:
            self._idle.append(worker)
        if not reply.get("ok"):
            raise ToolFailedError(str(reply.get("error")))
        return output_of(reply.get("value"), limit)


def python_tool_problems(spec: str, suite_dir: Path) -> list[str]:
    """What is wrong with `module:function` as `run` would find it, without running any of the
    tool's code: the module is found as the import system would find it, and a module written
    in Python must define the name at its top level. `validate` calls this."""
    module_name, sep, func_name = spec.partition(":")
    if not sep or not module_name or not func_name:
        return [f"{spec!r} is not module:function"]
    origin = _find_module(module_name, suite_dir)
    if origin is None:
        return [f"module {module_name!r} not found in {suite_dir} or on sys.path"]
    if origin.suffix != ".py":
        return []  # compiled or built in: its names cannot be read without importing it
    try:
        # Through the reader of user files: a FIFO or device named like a module is refused
        # rather than read without end.
        tree = ast.parse(userfiles.read_bytes(origin, what="python module"), filename=str(origin))
    except BadInputError as exc:
        return [f"module {module_name!r} ({origin}) cannot be read: {exc.detail}"]
    except (SyntaxError, ValueError) as exc:
        return [f"module {module_name!r} ({origin}) does not parse: {exc}"]
    except OSError as exc:
        return [f"module {module_name!r} ({origin}) cannot be read: {exc.strerror}"]
    names = _top_level_names(tree)
    if names is not None and func_name not in names:
        return [f"module {module_name!r} has no attribute {func_name!r}"]
    return []


def _find_module(module_name: str, suite_dir: Path) -> Path | None:
    """The file `import module_name` would load, the suite's directory first; found with the
    path finder alone, so no package's `__init__` runs."""
    if module_name.split(".")[0] in sys.builtin_module_names:
        return Path(f"<built-in {module_name}>")
    search: list[str] = [str(suite_dir), *sys.path]
    spec = None
    for part in module_name.split("."):
        spec = importlib.machinery.PathFinder.find_spec(part, search)
        if spec is None:
            return None
        search = list(spec.submodule_search_locations or [])
    assert spec is not None
    if spec.origin and spec.origin not in ("built-in", "frozen", "namespace"):
        return Path(spec.origin)
    return Path(f"<{module_name}>")  # a namespace package: nothing to read


def _top_level_names(tree: ast.Module) -> set[str] | None:
    """Names the module binds at its top level; None where it may bind others unseen (a star
    import, a module `__getattr__`, writes through `globals()`)."""
    names: set[str] = set()
    for node in _top_level_statements(tree.body):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return None
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            for target in ast.walk(node):
                if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store):
                    names.add(target.id)
                elif isinstance(target, ast.Name) and target.id in ("globals", "vars"):
                    return None
    return None if "__getattr__" in names else names


def _top_level_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements run at import: into `if`, `try`, `with` and loops, not into functions."""
    out: list[ast.stmt] = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(node, field, None)
            if isinstance(inner, list):
                out.extend(_top_level_statements([s for s in inner if isinstance(s, ast.stmt)]))
        for handler in getattr(node, "handlers", []):
            out.extend(_top_level_statements(handler.body))
    return out
