"""What a `python` target's code may not change in evalctl's own process, and how each is kept
or put back: the application runs in this interpreter (so the spy sees its calls), and a
reply must never lose the run.

While a python target's module is imported, and from its first call to its `close`
(`install`, `uninstall`):
- **stdout** is evalctl's (`--json` prints there when the run ends): `sys.stdout` and file
  descriptor 1 point at stderr, so a `print()` in the application, or a program it starts,
  lands beside evalctl's progress, not in its output;
- **`os._exit`** raises `TargetExit` in the process that opened the target (a forked child
  exits as ever): the call ends in `error` and the run goes on, instead of the process ending
  with no results;
- **threads** the application starts are daemon threads, whatever it asks: one still running
  when the run ends does not keep evalctl from exiting.

Around each call (`call_guard`): the working directory and the environment are put back as
they were before it, so an `os.chdir` or an `os.environ` change cannot move where evalctl
writes or what later cases see.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any, NoReturn, TextIO

# Marks a thread whose code is the application's: the target's call thread, and every thread
# started from one (so from the application's own threads too).
_MARK = "_evalctl_target_code"


class TargetExit(BaseException):
    """The application called `os._exit`: a BaseException, so its own `except Exception`
    does not swallow it on the way out of its code."""

    def __init__(self, status: object):
        super().__init__(status)
        self.status = status


class _Process:
    """The process-wide changes, made by the first python target opened and undone by the
    last one closed."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0
        self.pid = 0
        self.real_exit: Callable[[int], NoReturn] = os._exit
        self.real_start: Callable[[threading.Thread], None] = threading.Thread.start
        self.stdout: TextIO | None = None
        self.stdout_fd = -1

    def install(self) -> None:
        with self.lock:
            self.users += 1
            if self.users > 1:
                return
            self.pid = os.getpid()
            self.real_exit = os._exit
            self.real_start = threading.Thread.start
            os._exit = _exit
            threading.Thread.start = _start  # type: ignore[method-assign]
            self.stdout = sys.stdout
            _flush(sys.stdout)
            try:
                self.stdout_fd = os.dup(1)
                os.dup2(2, 1)
            except OSError:  # no descriptor 1 or 2 (a detached process): sys.stdout will do
                self.stdout_fd = -1
            sys.stdout = sys.stderr

    def uninstall(self) -> None:
        with self.lock:
            self.users -= 1
            if self.users > 0:
                return
            os._exit = self.real_exit  # type: ignore[assignment]
            threading.Thread.start = self.real_start  # type: ignore[method-assign,assignment]
            _flush(sys.stdout)
            _flush(sys.stderr)
            if self.stdout_fd >= 0:
                with contextlib.suppress(OSError):
                    os.dup2(self.stdout_fd, 1)
                with contextlib.suppress(OSError):
                    os.close(self.stdout_fd)
                self.stdout_fd = -1
            if self.stdout is not None:
                sys.stdout = self.stdout
                self.stdout = None


_process = _Process()


def _flush(stream: Any) -> None:
    with contextlib.suppress(Exception):
        stream.flush()


def _exit(status: int) -> NoReturn:
    if os.getpid() != _process.pid:  # a child forked by the application: its own exit
        _process.real_exit(status)
    raise TargetExit(status)


def _start(self: threading.Thread) -> None:
    if getattr(threading.current_thread(), _MARK, False) and not self.is_alive():
        # Started by the application: it may not outlive the run by holding the exit.
        with contextlib.suppress(RuntimeError):
            self.daemon = True
        setattr(self, _MARK, True)
    _process.real_start(self)


def install() -> None:
    """A python target opens: the process-wide changes (this module's docstring)."""
    _process.install()


def uninstall() -> None:
    """A python target closes: the changes undone once no other one is open."""
    _process.uninstall()


def mark_current_thread() -> None:
    """The calling thread runs the application's code (threads it starts are daemons)."""
    setattr(threading.current_thread(), _MARK, True)


@contextlib.contextmanager
def application_code() -> Iterator[None]:
    """The block runs the application's code on this thread (its import, say): threads it
    starts are daemons, and the working directory and environment are put back after."""
    thread = threading.current_thread()
    before = getattr(thread, _MARK, False)
    setattr(thread, _MARK, True)
    try:
        with call_guard():
            yield
    finally:
        setattr(thread, _MARK, before)


@contextlib.contextmanager
def call_guard() -> Iterator[None]:
    """The working directory and the environment as they were, after the block."""
    try:
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    environ = dict(os.environ)
    try:
        yield
    finally:
        if cwd is not None:
            with contextlib.suppress(OSError):
                if os.getcwd() != cwd:
                    os.chdir(cwd)
        _restore_environ(environ)


def _restore_environ(saved: dict[str, str]) -> None:
    now = dict(os.environ)
    for key in now.keys() - saved.keys():
        with contextlib.suppress(Exception):
            del os.environ[key]
    for key, value in saved.items():
        if now.get(key) != value:
            with contextlib.suppress(Exception):
                os.environ[key] = value
