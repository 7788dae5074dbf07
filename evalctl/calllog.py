"""The calls an application made during one case, wherever they were seen.

Two things report them: the function spy (`[[suite.spy]]`, evalctl.tools.spy_functions),
which wraps the application's own functions, and a target (evalctl.providers.targets) whose
reply lists the tool calls the application made. Neither knows which case is running: the
runner opens a log for each attempt (`collecting`) and whatever is recorded while it is open,
in that thread or in a context copied from it, lands there. The runner then records the calls
as the case's tool calls. This module sits low so both the providers and the tools reach it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LoggedCall:
    """One call the application made: what it was given and what came of it."""

    name: str
    arguments: dict[str, Any]
    # Text for the record (the returned value as JSON, or the exception).
    result: str
    # The returned value as JSON data (what `cites-tool-result` reads); None on an error.
    value: Any = None
    is_error: bool = False
    duration_ms: float = 0.0


class CallLog:
    """The calls of one attempt, in the order they finished; safe to add from any thread.
    It also carries the case's `vars` (a data row's values), which a target hands on to the
    application: the runner knows the case, a provider only its requests."""

    def __init__(self, case_vars: dict[str, Any] | None = None) -> None:
        self.vars: dict[str, Any] = dict(case_vars or {})
        self._calls: list[LoggedCall] = []
        self._lock = threading.Lock()

    def add(self, call: LoggedCall) -> None:
        with self._lock:
            self._calls.append(call)

    def calls(self) -> list[LoggedCall]:
        with self._lock:
            return list(self._calls)


_ACTIVE: ContextVar[CallLog | None] = ContextVar("evalctl_call_log", default=None)
# Every open log, for a call made on a thread the application started itself, where the
# context of the case did not follow: with one case running it can only be that case's.
_open: list[CallLog] = []
_open_lock = threading.Lock()


@contextmanager
def collecting(case_vars: dict[str, Any] | None = None) -> Iterator[CallLog]:
    """Open a log for the calls made until the block ends."""
    log = CallLog(case_vars)
    token = _ACTIVE.set(log)
    with _open_lock:
        _open.append(log)
    try:
        yield log
    finally:
        with _open_lock:
            _open.remove(log)
        _ACTIVE.reset(token)


def current() -> CallLog | None:
    """The log a call made here belongs to: this context's, else the only one open."""
    log = _ACTIVE.get()
    if log is not None:
        return log
    with _open_lock:
        return _open[0] if len(_open) == 1 else None


def record(call: LoggedCall) -> bool:
    """Add `call` to the current log; False when no case is collecting (a call made outside
    any case, or on a thread of its own while several cases run), and it is dropped."""
    log = current()
    if log is None:
        return False
    log.add(call)
    return True
