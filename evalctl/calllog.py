"""The calls an application made during one case, wherever they were seen.

Two things report them: the function spy (`[[suite.spy]]`, evalctl.tools.spy_functions),
which wraps the application's own functions, and a target (evalctl.providers.targets) whose
reply lists the tool calls the application made. Neither knows which case is running: the
runner opens a log for each attempt (`collecting`) and whatever is recorded while it is open,
in that thread or in a context copied from it, lands there. The runner then records the calls
as the case's tool calls. This module sits low so both the providers and the tools reach it.

What a call is recorded with goes through `recordable`: a bounded, JSON-safe copy of whatever
the application passed or returned (cycles, tuple-keyed dicts, huge or non-finite numbers,
lone surrogates, objects whose `repr` raises), made without ever raising, so recording can
neither break the application nor the results file.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from itertools import islice
from typing import Any

from evalctl.userfiles import MAX_NESTING

# How much of a value a record keeps. A record sits some 20 levels into a results file, so a
# value nests at most MAX_DEPTH levels of its own (every results file reads back); past
# MAX_ITEMS entries in all, or MAX_TEXT characters of one string, the rest is cut, marked.
MAX_DEPTH = MAX_NESTING - 20
MAX_ITEMS = 10_000
MAX_TEXT = 100_000
# Integers a JSON reader anywhere takes as exact; larger ones are recorded as text.
_MAX_INT = 2**63


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
    # The arguments as the function's signature bound them, defaults applied (a spied
    # function's); None where there is no signature to bind (a call a target reports).
    normalized_arguments: dict[str, Any] | None = None


class CallLog:
    """The calls of one attempt, in the order they finished; safe to add from any thread.
    It also carries the case's `vars` (a data row's values), which a target hands on to the
    application: the runner knows the case, a provider only its requests."""

    def __init__(
        self, case_vars: dict[str, Any] | None = None, case_input: dict[str, Any] | None = None
    ) -> None:
        self.vars: dict[str, Any] = dict(case_vars or {})
        # The case's `input` fields, which a python target with `call = "keywords"` passes.
        self.input: dict[str, Any] = dict(case_input or {})
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
def collecting(
    case_vars: dict[str, Any] | None = None, case_input: dict[str, Any] | None = None
) -> Iterator[CallLog]:
    """Open a log for the calls made until the block ends."""
    log = CallLog(case_vars, case_input)
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


def recordable(value: Any) -> Any:
    """A bounded, JSON-safe copy of `value`: dicts with text keys, lists, text, finite
    numbers, booleans and None. Tuples, sets and rows become lists, dataclasses and pydantic
    models their fields, bytes text; anything else its (cut) repr. A cycle, a level past
    MAX_DEPTH, entries past MAX_ITEMS and text past MAX_TEXT become a `<...>` marker. Never
    raises, and never iterates an iterator (a generator stays unconsumed)."""
    try:
        return _Copy().of(value, 0, frozenset())
    except Exception as exc:  # a RecursionError deep in the application's own stack, ...
        return f"<not recordable: {type(exc).__name__}>"


def safe_text(text: str, limit: int = MAX_TEXT) -> str:
    """`text` cut to `limit` characters (marked), lone surrogates replaced: writable as UTF-8."""
    if len(text) > limit:
        text = text[:limit] + f"<cut: {len(text) - limit} more characters>"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", errors="replace").decode("utf-8")
    return text


class _Copy:
    def __init__(self) -> None:
        self.left = MAX_ITEMS

    def of(self, value: Any, depth: int, path: frozenset[int]) -> Any:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            if -_MAX_INT < value < _MAX_INT:
                return int(value)
            return f"<int of {value.bit_length()} bits>"
        if isinstance(value, float):
            return float(value) if math.isfinite(value) else str(value)
        if isinstance(value, str):
            return safe_text(str(value))
        if isinstance(value, bytes | bytearray | memoryview):
            return safe_text(bytes(value[: MAX_TEXT * 4]).decode("utf-8", errors="replace"))
        if id(value) in path:
            return f"<cycle: {type(value).__name__}>"
        if depth >= MAX_DEPTH:
            return f"<cut: nested more than {MAX_DEPTH} levels deep>"
        inner = path | {id(value)}
        if isinstance(value, Mapping):
            return self._mapping(value, depth, inner)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name, None) for f in dataclasses.fields(value)}
            return self._mapping(fields, depth, inner)
        dump = getattr(value, "model_dump", None)
        if callable(dump) and not isinstance(value, type):
            try:
                return self.of(dump(mode="json"), depth, inner)
            except Exception:
                return self.repr_of(value)
        if isinstance(value, set | frozenset):
            items = self._items(value, depth, inner)
            try:
                return sorted(items, key=repr) if len(items) <= 1000 else items
            except Exception:
                return items
        if isinstance(value, list | tuple) or _a_collection(value):
            return self._items(value, depth, inner)
        return self.repr_of(value)

    def _mapping(self, value: Mapping[Any, Any], depth: int, path: frozenset[int]) -> Any:
        copied: dict[str, Any] = {}
        for key, item in islice(value.items(), self.left + 1):
            if self.left <= 0:
                copied["<cut>"] = f"more than {MAX_ITEMS} entries"
                break
            self.left -= 1
            copied[_key(key)] = self.of(item, depth + 1, path)
        return copied

    def _items(self, value: Any, depth: int, path: frozenset[int]) -> list[Any]:
        copied: list[Any] = []
        for item in islice(iter(value), self.left + 1):
            if self.left <= 0:
                copied.append(f"<cut: more than {MAX_ITEMS} entries>")
                break
            self.left -= 1
            copied.append(self.of(item, depth + 1, path))
        return copied

    def repr_of(self, value: Any) -> str:
        try:
            return safe_text(repr(value), 1000)
        except Exception:
            return f"<{type(value).__name__}>"


def _a_collection(value: Any) -> bool:
    """Sized and iterable, and not its own iterator (a row, a deque; not a generator)."""
    try:
        return hasattr(value, "__len__") and iter(value) is not value
    except Exception:
        return False


def _key(key: Any) -> str:
    """A dict key as JSON text keys it; a tuple or any other key by its repr."""
    if isinstance(key, str):
        return safe_text(key, 1000)
    if key is None or isinstance(key, bool):
        return {None: "null", True: "true", False: "false"}[key]
    if isinstance(key, int | float):
        return str(_Copy().of(key, 0, frozenset()))
    return _Copy().repr_of(key)
