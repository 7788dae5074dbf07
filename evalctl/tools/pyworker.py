"""The process a `python` tool runs in: `python pyworker.py SPEC SUITE_DIR MAX_DEPTH PARENT`.

It imports `module:function` (the module looked up in SUITE_DIR first), then answers one JSON
line per call on its stdin with one JSON line on the stdout it was started with:
`{"ok": true, "value": ...}` or `{"ok": false, "error": "..."}`. Its first line says whether
the import worked. Whatever the tool does (`print()`, `os.chdir`, `sys.exit`, a C call that
never returns) stays in this process: the tool's own stdout goes to stderr, and evalctl kills
this process when a call overruns (evalctl.tools.python_tool).

Run as a file, not as `-m evalctl...`: it needs only the standard library, so it starts fast
and never imports evalctl into the tool's process.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable
from typing import IO, Any

_PR_SET_PDEATHSIG = 1


def _send(out: IO[str], reply: dict[str, Any], encoded_value: str | None = None) -> None:
    line = json.dumps(reply)
    if encoded_value is not None:
        # The value was encoded (and its depth checked) once already.
        line = line[:-1] + ', "value": ' + encoded_value + "}"
    out.write(line + "\n")
    out.flush()


def _exit_message(exc: SystemExit, where: str) -> str:
    return f"{where} called sys.exit({exc.code!r})"


def _load(spec: str, suite_dir: str) -> Callable[..., Any]:
    """The function, or ValueError saying what is wrong with the module or the name."""
    module_name, _, func_name = spec.partition(":")
    sys.path.insert(0, suite_dir)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise ValueError(
                f"module {module_name!r} not found in {suite_dir} or on sys.path"
            ) from None
        raise ValueError(f"importing {module_name!r} failed: {exc}") from None
    except SystemExit as exc:
        raise ValueError(_exit_message(exc, f"importing {module_name!r}")) from None
    except BaseException as exc:  # the module's top level may raise anything
        raise ValueError(f"importing {module_name!r} failed: {type(exc).__name__}: {exc}") from None
    func = getattr(module, func_name, None)
    if func is None:
        raise ValueError(f"module {module_name!r} has no attribute {func_name!r}")
    if not callable(func):
        raise ValueError(f"{spec!r} is not callable")
    return func  # type: ignore[no-any-return]


def too_deep(value: Any, limit: int) -> bool:
    """True when `value` nests lists and objects deeper than `limit` (iteratively: a value
    built to be deep must not exhaust the stack checking it)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((v, depth + 1) for v in item)
    return False


def call(func: Callable[..., Any], arguments: dict[str, Any], max_depth: int) -> tuple[str, str]:
    """("ok", the value as JSON) or ("error", why) for one call."""
    try:
        value = func(**arguments)
    except SystemExit as exc:
        return "error", _exit_message(exc, "the tool")
    except KeyboardInterrupt:
        return "error", "the tool raised KeyboardInterrupt"
    except BaseException as exc:  # the tool's own failure: the model is told
        return "error", f"{type(exc).__name__}: {exc}"
    if too_deep(value, max_depth):
        return "error", f"the tool returned a value nested more than {max_depth} levels deep"
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError) as exc:
        return "error", f"the tool returned a value that is not JSON: {exc}"
    # A lone surrogate (a file name decoded with surrogateescape) is not UTF-8: shown as
    # U+FFFD, as a command's undecodable bytes are, rather than breaking the reply.
    return "ok", text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _read_calls(source: IO[str], lines: queue.Queue[str]) -> None:
    # On its own thread so that evalctl closing the pipe (or dying) ends this process even
    # while a call runs.
    for line in source:
        lines.put(line)
    os._exit(0)


def _die_with_parent(parent: int) -> None:
    """Linux: SIGKILL this process when evalctl dies, even mid-call (the closing stdin only
    ends it between calls, or while the tool lets Python run)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it died before the signal was armed
        os._exit(1)


def main(argv: list[str]) -> None:
    spec, suite_dir, max_depth, parent = argv[0], argv[1], int(argv[2]), int(argv[3])
    _die_with_parent(parent)
    # The protocol keeps the real stdout; fd 1 becomes stderr, so the tool's print() (and a
    # C library's writes) go where evalctl keeps only their tail, never into a reply.
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    # Written as printed: a worker that dies (os._exit, a crash) leaves its last words,
    # quoted in the tool error.
    with contextlib.suppress(AttributeError, ValueError):
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    # Likewise the calls come in on a copy of stdin, and the tool's stdin is empty: an
    # input() in the tool must neither block nor swallow the next call.
    calls = os.fdopen(os.dup(0), "r", encoding="utf-8")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    # Started as a file, Python put this file's directory first on the path; the tool must
    # see the path evalctl would have given it.
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]
    try:
        func = _load(spec, suite_dir)
    except ValueError as exc:
        _send(out, {"ok": False, "error": str(exc)})
        return
    _send(out, {"ok": True})
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=_read_calls, args=(calls, lines), daemon=True).start()
    while True:
        request = json.loads(lines.get())
        status, text = call(func, request["arguments"], max_depth)
        for stream in (sys.stdout, sys.stderr):
            # The tool may have closed or replaced it.
            with contextlib.suppress(Exception):
                stream.flush()
        if status == "ok":
            _send(out, {"ok": True}, text)
        else:
            _send(out, {"ok": False, "error": text})


if __name__ == "__main__":
    main(sys.argv[1:])
