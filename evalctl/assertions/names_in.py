"""Catalog grounding: `names-in`. Every name the answer mentions (found by a pattern: group 1
of each match) must be a name the application really has: from a SQLite query, a JSON list
of strings, or what a tool returned in this case. It catches an invented product, where
`cites-tool-result` asks that a given value be quoted.

A name counts as known when some known name is a case-insensitive substring of it
(`Château Margaux 2015` is `Château Margaux`), after markdown emphasis and the space around
it are stripped. Files are named relative to the suite file; a missing one is a validation
error.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import regex
from pydantic import Field, ValidationInfo, field_validator, model_validator

from evalctl import userfiles
from evalctl.assertions import pattern as patterns
from evalctl.assertions.base import Params, outcome, returned_value
from evalctl.errors import BadInputError
from evalctl.results.models import CheckResult
from evalctl.scoring.check import Check, ScoringContext


def _suite_file(value: str, info: ValidationInfo, key: str) -> str:
    """`value` resolved against the suite file's folder, when the loader gives it (the
    validation context's `suite_dir`); a file that is not there is refused then."""
    suite_dir = (info.context or {}).get("suite_dir")
    if not isinstance(suite_dir, Path):
        return value
    path = suite_dir / value
    if not path.is_file():
        raise ValueError(f"{key}: file not found: {value} (resolved against {suite_dir})")
    return str(path)


class NamesFrom(Params):
    """Where the known names come from, one of: `{ sqlite = "catalog.db", query = "SELECT
    name FROM wines" }` (the query's first column), `{ file = "names.json" }` (a JSON list of
    strings), `{ tool = "search_wines", path = "wines.name" }` (the strings the tool's calls
    in this case returned at `path`, which walks into lists)."""

    sqlite: str | None = Field(default=None, min_length=1)
    query: str | None = Field(default=None, min_length=1)
    file: str | None = Field(default=None, min_length=1)
    tool: str | None = Field(default=None, min_length=1)
    path: str = ""

    @field_validator("sqlite", "file")
    @classmethod
    def _found(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _suite_file(value, info, str(info.field_name))

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
            return _sqlite_names(self.sqlite, self.query)
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


def _sqlite_names(path: str, query: str) -> list[str]:
    """The first column of `query`'s rows, opened read-only; BadInputError naming the file
    when it cannot be read or the query fails."""
    try:
        stat = Path(path).stat()
    except OSError as exc:
        raise BadInputError(f"cannot read the database: {exc.strerror}", file=path) from None
    key = (path, stat.st_mtime_ns, stat.st_size, query)
    with _CACHE_LOCK:
        if key in _SQLITE_CACHE:
            return _SQLITE_CACHE[key]
    try:
        with sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True) as db:
            rows = db.execute(query).fetchall()
    except sqlite3.Error as exc:
        raise BadInputError(f"names_from query failed: {exc}", file=path) from None
    names = [str(row[0]) for row in rows if row and row[0] is not None]
    with _CACHE_LOCK:
        _SQLITE_CACHE[key] = names
    return names


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
