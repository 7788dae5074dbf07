"""Catalog grounding: `names-in`. Every name the answer mentions (found by a pattern: group 1
of each match) must be a name the application really has: from a SQLite query, a JSON list
of strings, or what a tool returned in this case. It catches an invented product, where
`cites-tool-result` asks that a given value be quoted.

A name counts as known when some known name is a case-insensitive substring of it
(`Château Margaux 2015` is `Château Margaux`), after markdown emphasis and the space around
it are stripped. Files are named relative to the suite file, under the path rule
(evalctl.userpaths); a missing one is a validation error, unless the suite says the
application builds it (`built_by_app = true`): then validate checks its name and query, and
scoring needs it.

A suite may come from a pull request, so its `query` only reads: one SELECT (or WITH …
SELECT) statement, checked as written, by SQLite's authorizer (reads and functions only: no
ATTACH, no PRAGMA, no write) and with `PRAGMA query_only`; a read-only connection alone let
`VACUUM INTO '/anywhere'` write a file. The query ends at the suite's `timeout_s` (SQLite's
progress handler) and at Ctrl-C or SIGTERM: it runs in a thread of its own while the caller
waits where a signal reaches it.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import regex
from pydantic import Field, ValidationInfo, field_validator, model_validator

from evalctl import userfiles, userpaths
from evalctl.assertions import pattern as patterns
from evalctl.assertions.base import Params, outcome, returned_value
from evalctl.errors import BadInputError
from evalctl.results.models import CheckResult
from evalctl.scoring.check import Check, ScoringContext


def _suite_file(value: str, info: ValidationInfo, key: str, built_by_app: bool) -> str:
    """`value` resolved against the suite file's folder, when the loader gives it (the
    validation context's `suite_dir`), under the path rule (evalctl.userpaths); a file that
    is not there is refused then, unless the application builds it."""
    suite_dir = (info.context or {}).get("suite_dir")
    if not isinstance(suite_dir, Path):
        return value
    try:
        path = userpaths.inside_project(value, suite_dir, file=suite_dir, field=key)
    except BadInputError as exc:
        raise ValueError(f"{key}: {exc.detail}") from None
    if not built_by_app and not path.is_file():
        raise ValueError(
            f"{key}: file not found: {value} (resolved against {suite_dir}; where the "
            "application under test builds it when it runs, say so: built_by_app = true)"
        )
    return str(path)


# What a names_from query may do, as SQLite's authorizer reports it while preparing: select,
# read columns, call functions, recurse in a WITH. ATTACH, PRAGMA, every write and every DDL
# are refused. VACUUM asks the authorizer nothing; the first word and `query_only` stop it.
_ALLOWED_ACTIONS = frozenset(
    {
        sqlite3.SQLITE_SELECT,
        sqlite3.SQLITE_READ,
        sqlite3.SQLITE_FUNCTION,
        getattr(sqlite3, "SQLITE_RECURSIVE", 33),
    }
)
# Functions that reach past the database where a build enables them.
_REFUSED_FUNCTIONS = frozenset(
    {"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit"}
)
_ACTION_WORDS = {
    sqlite3.SQLITE_ATTACH: "attach another database",
    sqlite3.SQLITE_DETACH: "detach a database",
    sqlite3.SQLITE_PRAGMA: "run a PRAGMA",
    sqlite3.SQLITE_INSERT: "insert rows",
    sqlite3.SQLITE_UPDATE: "update rows",
    sqlite3.SQLITE_DELETE: "delete rows",
    sqlite3.SQLITE_TRANSACTION: "open or end a transaction",
}
_READ_ONLY_WORDS = "names_from's query reads only: one SELECT (or WITH … SELECT) statement"
_SELECTS_NOTHING = f"selects nothing; {_READ_ONLY_WORDS}"
# How many SQLite virtual-machine steps between two looks at the deadline and the flags.
_PROGRESS_STEPS = 1000


def query_problem(query: str) -> str | None:
    """Why `query`, as written, is not one SELECT (or WITH … SELECT) statement; None when it
    is one. Strings, quoted names and comments are skipped as SQLite skips them."""
    words: list[str] = []
    ends = 0  # the `;` seen so far; text after the first is a second statement
    i, n = 0, len(query)
    while i < n:
        c = query[i]
        if c in "'\"`[":
            close = "]" if c == "[" else c
            j = query.find(close, i + 1)
            i = n if j < 0 else j + 1
        elif query.startswith("--", i):
            j = query.find("\n", i)
            i = n if j < 0 else j + 1
        elif query.startswith("/*", i):
            j = query.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == ";":
            ends += 1
            i += 1
        elif c.isspace():
            i += 1
        else:
            if ends:
                return f"holds more than one statement; {_READ_ONLY_WORDS}"
            j = i
            while j < n and (query[j].isalnum() or query[j] == "_"):
                j += 1
            if j > i and not words:
                words.append(query[i:j])
            i = max(j, i + 1)
    if not words or words[0].upper() not in ("SELECT", "WITH"):
        first = repr(words[0]) if words else "nothing"
        return f"begins with {first}; {_READ_ONLY_WORDS}"
    return None


class _Guard:
    """The authorizer: what the statement being prepared asked for that it may not do."""

    def __init__(self) -> None:
        self.selected = False
        self.refused: str | None = None

    def __call__(
        self, action: int, arg1: str | None, arg2: str | None, _db: str | None, _trig: str | None
    ) -> int:
        if action == sqlite3.SQLITE_SELECT:
            self.selected = True
        if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").casefold() in _REFUSED_FUNCTIONS:
            self.refused = self.refused or f"call {arg2}()"
            return sqlite3.SQLITE_DENY
        if action in _ALLOWED_ACTIONS:
            return sqlite3.SQLITE_OK
        # The first refusal is the statement's own; later ones follow from it.
        self.refused = self.refused or _ACTION_WORDS.get(
            action, "change the database or its connection"
        )
        return sqlite3.SQLITE_DENY


class _Stop:
    """When a query must end: past its deadline, at Ctrl-C or SIGTERM in the waiting thread
    (`cancel`), or when the interpreter is shutting down (the main thread has ended)."""

    def __init__(self, timeout_s: float | None):
        self.limit = timeout_s
        self.deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self.cancel = threading.Event()

    def late(self) -> bool:
        return self.deadline is not None and time.monotonic() > self.deadline

    def __call__(self) -> int:
        # Non-zero ends the statement (sqlite3.OperationalError "interrupted").
        stop = self.cancel.is_set() or self.late() or not threading.main_thread().is_alive()
        return 1 if stop else 0


def _open_read_only(path: str, guard: _Guard, stop: _Stop | None) -> sqlite3.Connection:
    db = sqlite3.connect(
        f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
    )
    db.execute("PRAGMA query_only = ON")
    db.set_authorizer(guard)
    if stop is not None:
        db.set_progress_handler(stop, _PROGRESS_STEPS)
    return db


def _prepared(db: sqlite3.Connection, guard: _Guard, query: str) -> str | None:
    """Prepare `query` without running it (EXPLAIN): why it may not run, or None."""
    try:
        db.execute(f"EXPLAIN {query}").fetchall()
    except sqlite3.Error as exc:
        if guard.refused is not None:
            return f"would {guard.refused}; {_READ_ONLY_WORDS}"
        return f"does not prepare: {exc}"
    if not guard.selected:
        return _SELECTS_NOTHING
    return None


def sqlite_query_refusal(path: str, query: str) -> str | None:
    """Why `query` may not run on the database at `path` (prepared, never run), or None;
    for `cases validate`, before any case runs."""
    problem = query_problem(query)
    if problem is not None:
        return problem
    guard = _Guard()
    try:
        db = _open_read_only(path, guard, None)
    except sqlite3.Error as exc:
        return f"cannot open the database: {exc}"
    try:
        refusal = _prepared(db, guard, query)
    finally:
        db.close()
    # A query that fails for another reason (no such column) is left to scoring, where it is
    # the check's error: the database may be rebuilt before the run.
    return refusal if guard.refused is not None or refusal == _SELECTS_NOTHING else None


class NamesFrom(Params):
    """Where the known names come from, one of: `{ sqlite = "catalog.db", query = "SELECT
    name FROM wines" }` (the query's first column), `{ file = "names.json" }` (a JSON list of
    strings), `{ tool = "search_wines", path = "wines.name" }` (the strings the tool's calls
    in this case returned at `path`, which walks into lists)."""

    # The application under test builds `sqlite` (or `file`) when it runs: a build output,
    # not in the repository, so validate does not ask for it; scoring does. (Declared first:
    # the file validators below read it.)
    built_by_app: bool = False
    sqlite: str | None = Field(default=None, min_length=1)
    query: str | None = Field(default=None, min_length=1)
    file: str | None = Field(default=None, min_length=1)
    tool: str | None = Field(default=None, min_length=1)
    path: str = ""

    @field_validator("sqlite", "file")
    @classmethod
    def _found(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        return _suite_file(value, info, str(info.field_name), bool(info.data.get("built_by_app")))

    @field_validator("query")
    @classmethod
    def _reads_only(cls, value: str | None, info: ValidationInfo) -> str | None:
        """One SELECT as written; with the loader's `suite_dir` and the database there, also
        as SQLite prepares it (never run)."""
        if value is None:
            return None
        problem = query_problem(value)
        database = info.data.get("sqlite")
        if (
            problem is None
            and isinstance((info.context or {}).get("suite_dir"), Path)
            and isinstance(database, str)
            and Path(database).is_file()
        ):
            problem = sqlite_query_refusal(database, value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _one_source(self) -> NamesFrom:
        given = [k for k in ("sqlite", "file", "tool") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                'give one of { sqlite = "file.db", query = "SELECT ..." }, '
                '{ file = "names.json" }, { tool = "name", path = "..." }'
                + (f" (found: {', '.join(given)})" if given else "")
            )
        if (self.query is None) != (self.sqlite is None):
            raise ValueError("query goes with sqlite, and sqlite needs one")
        if self.path and self.tool is None:
            raise ValueError("path goes with tool")
        return self

    def names(self, ctx: ScoringContext) -> list[str]:
        if self.sqlite is not None:
            assert self.query is not None  # _one_source saw to it
            return sqlite_names(self.sqlite, self.query, timeout_s=ctx.suite.timeout_s)
        if self.file is not None:
            data = userfiles.read_json(Path(self.file), what="names file")
            if not isinstance(data, list) or not all(isinstance(n, str) for n in data):
                raise BadInputError("must be a JSON list of strings", file=self.file)
            return data
        found: list[str] = []
        for call in ctx.transcript.tool_calls:
            if call.name == self.tool and not call.is_error:
                _strings_at(returned_value(call), self.path.split(".") if self.path else [], found)
        return found

    def described(self) -> str:
        if self.sqlite is not None:
            return f"{Path(self.sqlite).name} ({self.query})"
        if self.file is not None:
            return Path(self.file).name
        return f"what {self.tool!r} returned" + (f" at {self.path!r}" if self.path else "")


def _strings_at(value: Any, parts: list[str], out: list[str]) -> None:
    if isinstance(value, list):
        for item in value:
            _strings_at(item, parts, out)
    elif not parts:
        if isinstance(value, str):
            out.append(value)
    elif isinstance(value, dict) and parts[0] in value:
        _strings_at(value[parts[0]], parts[1:], out)


_CACHE_LOCK = threading.Lock()
# (path, mtime_ns, size, query) -> the names: a catalog is read once per run, not per case.
_SQLITE_CACHE: dict[tuple[str, int, int, str], list[str]] = {}


# A query's time when the suite sets no timeout_s: evalctl's default time of a case.
DEFAULT_QUERY_TIMEOUT_S = 120.0
_FIELD = "names_from.query"


def sqlite_names(path: str, query: str, *, timeout_s: float | None = None) -> list[str]:
    """The first column of `query`'s rows, read-only (see the module docstring), within
    `timeout_s` (default DEFAULT_QUERY_TIMEOUT_S); BadInputError naming the file when it
    cannot be read, the query may not run, fails or runs past its time. Ctrl-C and SIGTERM
    (KeyboardInterrupt in the main thread) end the query and go on up."""
    try:
        stat = Path(path).stat()
    except OSError as exc:
        raise BadInputError(f"cannot read the database: {exc.strerror}", file=path) from None
    key = (path, stat.st_mtime_ns, stat.st_size, query)
    with _CACHE_LOCK:
        if key in _SQLITE_CACHE:
            return _SQLITE_CACHE[key]
    problem = query_problem(query)
    if problem is not None:
        raise BadInputError(f"the query {problem}", file=path, field=_FIELD)
    limit = DEFAULT_QUERY_TIMEOUT_S if timeout_s is None else timeout_s
    stop = _Stop(limit)
    _stopped_at_exit(stop)
    outcome: list[list[str] | BaseException] = []
    done = threading.Event()

    def work() -> None:
        try:
            outcome.append(_read(path, query, stop))
        except BaseException as exc:  # handed to the waiting thread, which raises it
            outcome.append(exc)
        finally:
            done.set()

    # A thread of its own: in the main thread, SQLite would swallow the KeyboardInterrupt
    # a signal raises inside the progress handler; here the waiting thread receives it.
    worker = threading.Thread(target=work, name="evalctl-names-from", daemon=True)
    worker.start()
    try:
        while not done.wait(0.1):
            pass
    except BaseException:
        stop.cancel.set()
        raise
    finally:
        with _RUNNING_LOCK:
            _RUNNING.discard(stop)
    result = outcome[0]
    if isinstance(result, BaseException):
        raise result
    with _CACHE_LOCK:
        _SQLITE_CACHE[key] = result
    return result


# The queries running now: ended when the interpreter shuts down.
_RUNNING: set[_Stop] = set()
_RUNNING_LOCK = threading.Lock()
_hooked = False


def _stop_all() -> None:
    with _RUNNING_LOCK:
        for stop in _RUNNING:
            stop.cancel.set()


def _stopped_at_exit(stop: _Stop) -> None:
    """Have `stop` set when the interpreter shuts down. After Ctrl-C in a concurrent run the
    main thread exits while a case's thread still waits on a query, and concurrent.futures
    joins that thread at exit: through threading's own exit hook, registered here (after the
    run's pool registered its own, so it runs first), the query ends instead of running on
    to its deadline. Where that hook is missing, the deadline still ends it."""
    global _hooked
    with _RUNNING_LOCK:
        _RUNNING.add(stop)
        if _hooked:
            return
        _hooked = True
    register = getattr(threading, "_register_atexit", None)
    if register is not None:
        # RuntimeError: already shutting down, so nothing more will be joined late.
        with contextlib.suppress(RuntimeError):
            register(_stop_all)


def _read(path: str, query: str, stop: _Stop) -> list[str]:
    guard = _Guard()
    try:
        db = _open_read_only(path, guard, stop)
    except sqlite3.Error as exc:
        raise BadInputError(f"cannot open the database: {exc}", file=path) from None
    try:
        refusal = _prepared(db, guard, query)
        if refusal is not None:
            raise BadInputError(f"the query {refusal}", file=path, field=_FIELD)
        names: list[str] = []
        for row in db.execute(query):
            if row and row[0] is not None:
                names.append(str(row[0]))
        return names
    except sqlite3.Error as exc:
        if stop.late():
            raise BadInputError(
                f"the query ran past the suite's timeout_s ({stop.limit:g} s) and was stopped",
                file=path,
                field=_FIELD,
            ) from None
        if stop.cancel.is_set():
            raise BadInputError("the query was stopped", file=path, field=_FIELD) from None
        if guard.refused is not None:
            raise BadInputError(
                f"the query would {guard.refused}; {_READ_ONLY_WORDS}", file=path, field=_FIELD
            ) from None
        raise BadInputError(f"names_from query failed: {exc}", file=path, field=_FIELD) from None
    finally:
        db.close()


_EMPHASIS = regex.compile(r"\*\*|__|[*`]|~~")


def clean_name(text: str) -> str:
    """A matched name without markdown emphasis and the space (and `_`) around it."""
    return _EMPHASIS.sub("", text).strip().strip("_").strip()


class NamesInParams(Params):
    # Group 1 of each match is a name: `\[WINE:\d+\]\s*\n([^\n]+)`.
    pattern: str
    names_from: NamesFrom

    @field_validator("pattern")
    @classmethod
    def _one_group(cls, value: str) -> str:
        problem = patterns.compile_problem(value)
        if problem:
            raise ValueError(problem)
        if regex.compile(value, regex.VERSION0).groups < 1:
            raise ValueError("the pattern needs a group: group 1 of each match is a name")
        return value


def names_in(pattern: str, text: str) -> list[str]:
    """Group 1 of each match of `pattern` in `text`, cleaned, each once, in order;
    PatternTimeoutError when the search runs past the limit."""
    try:
        matches = list(
            regex.finditer(pattern, text, regex.VERSION0, timeout=patterns.SEARCH_TIMEOUT_S)
        )
    except TimeoutError:
        raise patterns.PatternTimeoutError(
            f"/{pattern}/ did not finish within {patterns.SEARCH_TIMEOUT_S:g}s on this text"
        ) from None
    found = [clean_name(m.group(1) or "") for m in matches]
    return list(dict.fromkeys(name for name in found if name))


class NamesIn(Check[NamesInParams]):
    """Every name the answer mentions (group 1 of `pattern`) has a known name from
    `names_from` inside it, ignoring case; `n/a` when the answer names none."""

    type_name = "names-in"
    params_model = NamesInParams

    def tools_named(self, params: NamesInParams) -> list[tuple[str, str]]:
        tool = params.names_from.tool
        return [("names_from.tool", tool)] if tool is not None else []

    def evaluate(self, params: NamesInParams, ctx: ScoringContext) -> CheckResult:
        source = params.names_from
        expected = f"every name in the answer is one of {source.described()}"
        try:
            mentioned = names_in(params.pattern, ctx.answer.text)
            known = [name.casefold() for name in source.names(ctx)]
        except (patterns.PatternTimeoutError, BadInputError) as exc:
            return CheckResult(
                name=self.type_name, status="error", expected=expected, message=str(exc)
            )
        if not mentioned:
            return CheckResult(
                name=self.type_name,
                status="n/a",
                expected=expected,
                actual=[],
                message="the answer names none",
            )
        unknown = [m for m in mentioned if not any(k in m.casefold() for k in known if k)]
        why = f"found nowhere in {source.described()}: {', '.join(map(repr, unknown))}"
        if not known:
            why += " (no known names)"
        actual = {"names": mentioned, "unknown": unknown}
        return outcome(self.type_name, not unknown, expected, actual, why)


CHECKS = (NamesIn(),)
