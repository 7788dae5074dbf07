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
- **threads** the application starts are daemon threads, whatever it asks, and a
  `ThreadPoolExecutor`'s workers it starts are not joined at exit (concurrent.futures joins
  every worker then): one still running when the run ends does not keep evalctl from exiting.

Around each call (`call_guard`): the working directory and the environment are put back as
they were before it, so an `os.chdir` or an `os.environ` change cannot move where evalctl
writes or what later cases see.

Application code runs as a `Call` (a case's call, or the import): the thread it runs on and
every thread started from one carry it. Once it has ended (returned, or given up on at its
deadline, while Python cannot stop the thread), those threads may no longer change the
working directory (`os.chdir` raises PermissionError) nor write to sys.stdout or sys.stderr
(what they write is dropped): a call abandoned at its deadline cannot move where evalctl
writes nor print into its output after its case. Where such a thread is still alive when the
last target closes, these guards stay in place (sys.stdout and sys.stderr then stay wrapped,
writing through for every other thread); else everything is put back.
"""

from __future__ import annotations

import concurrent.futures.thread
import contextlib
import errno
import os
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn, TextIO

# Marks a thread whose code is the application's, with the `Call` it runs for: the target's
# call thread, and every thread started from one (so from the application's own threads too).
_MARK = "_evalctl_target_code"


class Call:
    """One stretch of the application's code (a case's call, or its module's import), carried
    by every thread that runs it; `end` when its case is over."""

    def __init__(self) -> None:
        self.ended = False

    def end(self) -> None:
        # Under the lock a guarded chdir holds: none is half done once this returns.
        with _process.cwd_lock:
            self.ended = True


def _ended() -> bool:
    """The calling thread runs application code whose call has ended."""
    call = getattr(threading.current_thread(), _MARK, None)
    return isinstance(call, Call) and call.ended


class _Stream:
    """sys.stdout or sys.stderr, dropping what a thread of an ended call writes."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, text: str) -> int:
        return len(text) if _ended() else self.inner.write(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _unwrapped(stream: Any) -> TextIO:
    while isinstance(stream, _Stream):
        stream = stream.inner
    return stream  # type: ignore[no-any-return]


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
        self.real_chdir = os.chdir
        self.real_fchdir = os.fchdir
        # Thread.start and os.chdir replaced: from the first install until an uninstall that
        # finds no application thread alive.
        self.hooked = False
        self.cwd_lock = threading.Lock()
        self.threads: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
        self.exit_hook = False
        self.stdout: TextIO | None = None
        self.stderr: TextIO | None = None
        self.stdout_fd = -1

    def install(self) -> None:
        with self.lock:
            self.users += 1
            if self.users > 1:
                return
            self.pid = os.getpid()
            self.real_exit = os._exit
            os._exit = _exit
            if not self.hooked:
                self.hooked = True
                self.real_start = threading.Thread.start
                self.real_chdir, self.real_fchdir = os.chdir, os.fchdir
                threading.Thread.start = _start  # type: ignore[method-assign]
                os.chdir, os.fchdir = _chdir, _fchdir
            self._forget_workers_at_exit()
            # Unwrapped: streams left wrapped by an earlier target, or replaced since.
            self.stdout, self.stderr = _unwrapped(sys.stdout), _unwrapped(sys.stderr)
            _flush(self.stdout)
            try:
                self.stdout_fd = os.dup(1)
                os.dup2(2, 1)
            except OSError:  # no descriptor 1 or 2 (a detached process): sys.stdout will do
                self.stdout_fd = -1
            sys.stdout = _Stream(self.stderr)
            sys.stderr = _Stream(self.stderr)

    def uninstall(self) -> None:
        with self.lock:
            self.users -= 1
            if self.users > 0:
                return
            os._exit = self.real_exit  # type: ignore[assignment]
            _flush(sys.stdout)
            _flush(sys.stderr)
            if self.stdout_fd >= 0:
                with contextlib.suppress(OSError):
                    os.dup2(self.stdout_fd, 1)
                with contextlib.suppress(OSError):
                    os.close(self.stdout_fd)
                self.stdout_fd = -1
            if self.stdout is None or self.stderr is None:
                return
            if any(thread.is_alive() for thread in list(self.threads)):
                # Application code may still run (a call abandoned at its deadline): it keeps
                # out of the directory and the streams it no longer may touch.
                sys.stdout = _Stream(self.stdout)
                sys.stderr = _Stream(self.stderr)
            else:
                sys.stdout, sys.stderr = self.stdout, self.stderr
                threading.Thread.start = self.real_start  # type: ignore[method-assign,assignment]
                os.chdir, os.fchdir = self.real_chdir, self.real_fchdir
                self.hooked = False
            self.stdout = self.stderr = None

    def _forget_workers_at_exit(self) -> None:
        """At exit concurrent.futures joins every executor worker, a daemon or not, so one
        the application started and left busy would hold evalctl's exit: this hook, run
        before concurrent.futures' (threading runs them last registered first), drops those
        from what it joins."""
        if self.exit_hook:
            return
        register = getattr(threading, "_register_atexit", None)
        if register is None:
            return
        with contextlib.suppress(RuntimeError):  # already exiting: nothing joined late
            register(_forget_application_workers)
        self.exit_hook = True


_process = _Process()


def _flush(stream: Any) -> None:
    with contextlib.suppress(Exception):
        stream.flush()


def _exit(status: int) -> NoReturn:
    if os.getpid() != _process.pid:  # a child forked by the application: its own exit
        _process.real_exit(status)
    raise TargetExit(status)


def _start(self: threading.Thread) -> None:
    call = getattr(threading.current_thread(), _MARK, None)
    if call is not None and not self.is_alive():
        # Started by the application: it may not outlive the run by holding the exit.
        with contextlib.suppress(RuntimeError):
            self.daemon = True
        setattr(self, _MARK, call)
        _process.threads.add(self)
    _process.real_start(self)


def _forget_application_workers() -> None:
    # Typed a Mapping in the stubs; a WeakKeyDictionary at run time.
    queues: Any = concurrent.futures.thread._threads_queues
    for thread in list(queues):
        if getattr(thread, _MARK, None) is not None:
            with contextlib.suppress(KeyError):
                del queues[thread]


def _refuse_if_ended() -> None:
    if _ended():
        raise PermissionError(
            errno.EPERM,
            "evalctl: the case this call ran for has ended; it may not change the working "
            "directory",
        )


def _chdir(path: Any) -> None:
    with _process.cwd_lock:
        _refuse_if_ended()
        _process.real_chdir(path)


def _fchdir(fd: Any) -> None:
    with _process.cwd_lock:
        _refuse_if_ended()
        _process.real_fchdir(fd)


def install() -> None:
    """A python target opens: the process-wide changes (this module's docstring)."""
    _process.install()


def uninstall() -> None:
    """A python target closes: the changes undone once no other one is open."""
    _process.uninstall()


def mark_current_thread(call: Call) -> None:
    """The calling thread runs the application's code for `call` (threads it starts are
    daemons, and carry it)."""
    thread = threading.current_thread()
    setattr(thread, _MARK, call)
    _process.threads.add(thread)


@contextlib.contextmanager
def application_code() -> Iterator[None]:
    """The block runs the application's code on this thread (its import, say): threads it
    starts are daemons, and the working directory and environment are put back after."""
    thread = threading.current_thread()
    before = getattr(thread, _MARK, None)
    call = Call()
    setattr(thread, _MARK, call)
    try:
        with call_guard():
            yield
    finally:
        # Threads it started run on as application code whose call has ended.
        call.end()
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
