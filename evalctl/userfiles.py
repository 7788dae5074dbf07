"""Reading the files users hand to evalctl: one closed error path.

Suites, the data files they take cases from (CSV, JSONL, JSON, TOML), reply scripts,
results, baselines, run manifests and journals all come in through here, so every way a
file can be wrong ends the same way: a `BadInputError` (exit 2) that names the file (and
the row, in a data file) and says what is wrong with it, never a traceback. Covered: a
missing file, a directory where a file belongs (or the reverse), no permission, bytes that
are not UTF-8 (a binary file), invalid or truncated TOML/JSON/CSV, and nesting deep enough
to exhaust Python's recursion limit or any recursive code that walks the data later.

Every read is bounded: a file that is not a regular file (a device such as /dev/zero, a
FIFO, a socket) is refused before it is opened for reading (and a FIFO is never opened
blocking), and a file larger than the size limit (`max_file_bytes` in evalctl.toml,
EVALCTL_MAX_FILE_BYTES; 100 MB by default) is refused with the limit named, never read into
memory whole. Which files a suite may name at all is evalctl.userpaths' rule.

Writing is the other half: `environment_error` turns an OSError from a write (full disk,
read-only mount, no permission) into an `InfraError` (exit 3) that says what to fix.
"""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import re
import stat
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalctl.errors import BadInputError, InfraError

# Deeper than any file evalctl reads or writes legitimately, shallow enough that pydantic,
# redaction and rendering (all recursive) stay far from Python's recursion limit.
MAX_NESTING = 100

# errno values that describe the machine rather than the input or a bug.
ENVIRONMENT_ERRNOS = frozenset(
    {
        errno.ENOSPC,
        errno.EDQUOT,
        errno.EROFS,
        errno.EACCES,
        errno.EPERM,
        errno.EIO,
        errno.EMFILE,
        errno.ENFILE,
    }
)


# The most of one file evalctl reads (bytes), unless `max_file_bytes` in evalctl.toml or
# EVALCTL_MAX_FILE_BYTES (`set_max_file_bytes`, from config) says otherwise: far above any
# suite, data file or results file evalctl ships or writes for thousands of cases, far below
# what would exhaust memory once parsed.
DEFAULT_MAX_FILE_BYTES = 100_000_000
_limit = DEFAULT_MAX_FILE_BYTES

# The documented ranges of numbers users hand in that size work or waits (docs/errors.md,
# "Ranges"): past them a value is a typo or an attack, and is refused (exit 2) before any
# case runs, instead of overflowing a wait (threading refuses a timeout past ~9.2e9 s) or
# an arithmetic table after every case ran.
# Seconds a case (`timeout_s`, `--timeout`) may take: one day.
MAX_TIMEOUT_S = 86_400.0
# Samples of one case on either side of a comparison: `--samples`, `--repeats`, and a
# baseline's or results file's `runs` and `samples`.
MAX_SAMPLES = 1_000

# What a file that is not a regular file is, in words.
_SPECIAL = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)


def set_max_file_bytes(limit: int | None) -> None:
    """The size limit of every later read (None: the default)."""
    global _limit
    _limit = DEFAULT_MAX_FILE_BYTES if limit is None else limit


def max_file_bytes() -> int:
    return _limit


def read_bytes(path: Path, *, what: str = "file") -> bytes:
    """The bytes of `path`, or a BadInputError naming it and saying why not. Only a regular
    file (or a symlink to one) is read, and only up to the size limit: a device, FIFO or
    socket is refused after `stat`, before it is opened, and it is opened non-blocking, so a
    FIFO put in place between the two cannot hang the read either."""
    try:
        _check_regular(os.stat(path), path, what)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            _check_regular(info, path, what)
            data = fh.read(_limit + 1)
        if len(data) > _limit:
            raise _too_big(path, what)
        return data
    except FileNotFoundError:
        raise BadInputError(f"no such {what}", file=str(path)) from None
    except IsADirectoryError:
        raise BadInputError(f"is a directory, expected a {what}", file=str(path)) from None
    except NotADirectoryError:
        raise BadInputError(
            "a parent of this path is a file, not a directory", file=str(path)
        ) from None
    except PermissionError:
        raise BadInputError("permission denied: cannot read it", file=str(path)) from None
    except OSError as exc:
        raise BadInputError(f"cannot read: {exc.strerror or exc}", file=str(path)) from None


def path_problem(path: Path, what: str = "file") -> str | None:
    """Why `path` cannot be read as a `what`, in words; None for a regular file (or a symlink
    to one). It only looks (`stat`): a FIFO is named as one, never opened and waited on."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return f"no such {what}"
    except NotADirectoryError:
        return "a parent of this path is a file, not a directory"
    except PermissionError:
        return "permission denied: cannot look at it"
    except OSError as exc:  # ENAMETOOLONG, ELOOP, ...
        return f"cannot read: {exc.strerror or exc}"
    if stat.S_ISDIR(info.st_mode):
        return f"is a directory, expected a {what}"
    if not stat.S_ISREG(info.st_mode):
        kind = next((words for test, words in _SPECIAL if test(info.st_mode)), "a special file")
        return f"is {kind}, not a regular file: evalctl reads a {what} only from a regular file"
    return None


def _check_regular(info: os.stat_result, path: Path, what: str) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(path)
    if not stat.S_ISREG(info.st_mode):
        kind = next((words for test, words in _SPECIAL if test(info.st_mode)), "a special file")
        raise BadInputError(
            f"is {kind}, not a regular file: evalctl reads a {what} only from a regular file",
            file=str(path),
        )
    if info.st_size > _limit:
        raise _too_big(path, what)


def _too_big(path: Path, what: str) -> BadInputError:
    return BadInputError(
        f"larger than the {_limit:,}-byte limit on a {what} (max_file_bytes in evalctl.toml, "
        "or EVALCTL_MAX_FILE_BYTES, raises it)",
        file=str(path),
    )


def decode_text(raw: bytes, path: Path) -> str:
    """UTF-8 text, or a BadInputError pointing at the first bad byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise BadInputError(
            f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start}, line {line}); "
            "is it a binary file?",
            file=str(path),
        ) from None


def read_text(path: Path, *, what: str = "file") -> str:
    return decode_text(read_bytes(path, what=what), path)


def parse_toml(text: str, path: Path) -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise BadInputError(f"invalid TOML: {exc}", file=str(path)) from None
    except RecursionError:
        raise _too_deep(path) from None
    check_nesting(data, path)
    return data


# A `\\uDXXX` escape of JSON that is not half of a surrogate pair: a lone high surrogate
# not followed by a low one, or a lone low one not preceded by a high one. Only these make
# json.loads return a string no UTF-8 writer can encode (a raw surrogate cannot be in text
# decoded as UTF-8). The pattern may also match text after an escaped backslash, so a match
# is only a reason to look at the parsed values.
_LONE_SURROGATE_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def parse_json(text: str, path: Path, *, nesting: bool = True, text_check: bool = True) -> Any:
    """Parse JSON text; `nesting=False` leaves the depth check to the caller (who may first
    drop parts it will not read, and then check what remains). A string holding a lone
    surrogate (`"\\ud800"`) is refused, naming where it is: printing or writing it would
    fail later (`text_check=False`: the caller checks, naming rows its own way)."""
    if text_check and _LONE_SURROGATE_ESCAPE.search(text):
        _check_json_text(parse_json(text, path, nesting=nesting, text_check=False), path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        # A file that ends inside a string or an open object/array was cut short (an
        # interrupted copy or write), which is worth saying in those words.
        why = "truncated JSON" if ends_open(text) else "invalid JSON"
        what = exc.msg.removesuffix(" at")  # "Unterminated string starting at" + position
        raise BadInputError(
            f"{why}: {what} at line {exc.lineno} column {exc.colno}", file=str(path)
        ) from None
    except RecursionError:
        raise _too_deep(path) from None
    if nesting:
        check_nesting(data, path)
    return data


def _check_json_text(data: Any, path: Path) -> None:
    stack: list[tuple[Any, tuple[int | str, ...]]] = [(data, ())]
    while stack:
        value, loc = stack.pop()
        bad = None
        if isinstance(value, str):
            bad = _lone_surrogate(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                if _lone_surrogate(key) is not None:
                    bad, value = _lone_surrogate(key), key
                    break
                stack.append((item, (*loc, key)))
        elif isinstance(value, list):
            stack.extend((item, (*loc, i)) for i, item in enumerate(value))
        if bad is not None:
            where = field_path(loc).encode("utf-8", "backslashreplace").decode("ascii")
            raise BadInputError(
                f"holds a lone surrogate ({bad}), which is not a character"
                + (f", at {where}" if where else ""),
                file=str(path),
            )


def read_toml(path: Path, *, what: str = "TOML file") -> dict[str, Any]:
    return parse_toml(read_text(path, what=what), path)


def read_json(path: Path, *, what: str = "JSON file") -> Any:
    return parse_json(read_text(path, what=what), path)


def read_toml_or_json(path: Path, *, what: str) -> Any:
    """A file that may be written in either language: JSON when it is named `*.json`."""
    text = read_text(path, what=what)
    return parse_json(text, path) if path.suffix == ".json" else parse_toml(text, path)


def field_path(loc: Sequence[int | str], *, below: bool = False) -> str:
    """Where a validation error sits, as the user wrote it: `case.assert[1].equals`, dotted
    keys and list positions numbered from 1 (as suite errors number tables). `below=True`
    gives a path below a field already named: `.equals`, `[2].name`."""
    out = ""
    for part in loc:
        out += f"[{part + 1}]" if isinstance(part, int) else (f".{part}" if out or below else part)
    return out


def validation_message(err: Mapping[str, Any], *, patterns: Mapping[str, str] | None = None) -> str:
    """A pydantic error in words for a user file: unknown and missing keys said plainly, a
    value that does not match a pattern said with the pattern's words where `patterns`
    (pattern → words) has them. The one wording of validation errors: every reader of a
    user file, evalctl.toml and a target's reply included, says them through here."""
    kind = err["type"]
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key is missing"
    if kind == "string_pattern_mismatch":
        pattern = str((err.get("ctx") or {}).get("pattern"))
        words = (patterns or {}).get(pattern, f"must match {pattern}")
        return f"{err['input']!r} is not allowed: {words}"
    return str(err["msg"]).removeprefix("Value error, ")


def validation_error(
    errors: Sequence[Mapping[str, Any]],
    *,
    file: Path | str | None = None,
    prefix: Sequence[int | str] = (),
    case_id: str | None = None,
    words: Callable[[Mapping[str, Any]], str] = validation_message,
) -> BadInputError:
    """A pydantic ValidationError's `errors()` as one bad-input error: the first, located
    (`file`, `case_id`, its field as `field_path` words it, under `prefix`) and worded by
    `validation_message` (or `words`, a reader's own on top of it), with how many more
    there are."""
    first = errors[0]
    more = len(errors) - 1
    message = words(first)
    if more:
        message += f" (and {more} more problem{'s' * (more > 1)})"
    return BadInputError(
        message,
        file=str(file) if file is not None else None,
        case_id=case_id,
        field=field_path((*prefix, *first["loc"])) or None,
    )


def check_nesting(data: Any, path: Path, limit: int = MAX_NESTING) -> None:
    """Refuse data nested deeper than `limit` (iteratively: the check must not recurse)."""
    stack: list[tuple[Any, int]] = [(data, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            raise _too_deep(path, limit)
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


def ends_open(text: str) -> bool:
    """True when `text` ends inside a string or with brackets left open."""
    depth = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
    return in_string or depth > 0


def environment_error(
    exc: OSError, doing: str = "write", path: Path | None = None
) -> InfraError | None:
    """An InfraError for an OSError the machine caused (full disk, read-only, permissions),
    saying what to fix; None for any other OSError (a bug, left to the last-resort handler)."""
    if exc.errno not in ENVIRONMENT_ERRNOS:
        return None
    named = path if path is not None else exc.filename
    target = str(named) if named is not None else "a file"
    hint = {
        errno.ENOSPC: "free some disk space (or point --out / EVALCTL_HOME elsewhere), then retry",
        errno.EDQUOT: "your disk quota is used up: free some space, then retry",
        errno.EROFS: "the file system is mounted read-only: point --out / EVALCTL_HOME at a "
        "writable directory",
        errno.EMFILE: "too many open files: raise `ulimit -n` or lower --concurrency",
        errno.ENFILE: "the system ran out of file handles: retry later",
        errno.EIO: "the disk reported an I/O error: check it, then retry",
    }.get(exc.errno or 0, "check the permissions, or point --out / EVALCTL_HOME elsewhere")
    return InfraError(f"cannot {doing} {target}: {exc.strerror or exc}", hint=hint)


def _too_deep(path: Path, limit: int = MAX_NESTING) -> BadInputError:
    return BadInputError(f"nested more than {limit} levels deep", file=str(path))


# Data files a suite's `cases_from` names, by suffix.
DATA_SUFFIXES = (".csv", ".jsonl", ".json", ".toml", ".yaml", ".yml")


@dataclass(frozen=True, slots=True)
class Record:
    """One row of a data file: where it is (`line 4`, `item 2`) and its values by column."""

    where: str
    values: dict[str, Any]


def read_records(path: Path) -> list[Record]:
    """The rows of a CSV, JSONL, JSON, TOML or YAML data file, each a table of column -> value.
    Every failure is a BadInputError naming the file, and the row where there is one."""
    suffix = path.suffix.lower()
    if suffix not in DATA_SUFFIXES:
        raise BadInputError(
            f"unsupported data file type {path.suffix or '(none)'!r} "
            f"(use {', '.join(DATA_SUFFIXES)})",
            file=str(path),
        )
    # Spreadsheet programs write a byte-order mark before UTF-8 CSV; it is not data.
    text = read_text(path, what="data file").removeprefix("\ufeff")
    records = _records(text, path, suffix)
    for record in records:
        _check_text(record, path)
    return records


def _records(text: str, path: Path, suffix: str) -> list[Record]:
    if suffix == ".csv":
        return _csv_records(text, path)
    if suffix == ".jsonl":
        return _jsonl_records(text, path)
    if suffix == ".json":
        data = parse_json(text, path, text_check=False)  # rows are checked by row and column
        if not isinstance(data, list):
            raise BadInputError("a JSON data file holds an array of objects", file=str(path))
        return [_record(item, f"item {n}", path) for n, item in enumerate(data, start=1)]
    if suffix in (".yaml", ".yml"):
        data = parse_yaml(text, path)
        if not isinstance(data, list):
            raise BadInputError("a YAML data file holds a list of mappings", file=str(path))
        return [_record(item, f"item {n}", path) for n, item in enumerate(data, start=1)]
    data = parse_toml(text, path)
    rows = data.get("row")
    extra = sorted(set(data) - {"row"})
    if extra or not isinstance(rows, list):
        raise BadInputError(
            "a TOML data file holds [[row]] tables and nothing else"
            + (f" (found: {', '.join(extra)})" if extra else ""),
            file=str(path),
        )
    return [_record(item, f"[[row]] {n}", path) for n, item in enumerate(rows, start=1)]


# The most values a YAML file may hold once its aliases are expanded (each alias is a copy
# here): a few anchors nested in each other would otherwise expand to billions.
MAX_YAML_VALUES = 1_000_000


def parse_yaml(text: str, path: Path) -> Any:
    """A YAML document as JSON's types (yaml.safe_load: no Python objects). A date or time
    becomes its ISO text, a key that is not text its text; aliases are expanded as copies, at
    most MAX_YAML_VALUES values and max_file_bytes() characters in all, nested at most
    MAX_NESTING deep."""
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise BadInputError(f"{where}invalid YAML: {exc.problem}", file=str(path)) from None
    except yaml.YAMLError as exc:
        raise BadInputError(f"invalid YAML: {exc}", file=str(path)) from None
    except RecursionError:
        raise _too_deep(path) from None
    return _plain_yaml(data, path)


def _plain_yaml(data: Any, path: Path) -> Any:
    """`data` copied as JSON's types, iteratively, within the value and nesting bounds."""
    import datetime

    count = 0
    # Text and values once every alias is a copy: bounded as a file's size is, so one 1 MB
    # string aliased 10,000 times is refused here, not when a prompt is built from it.
    size = 0
    limit = max_file_bytes()

    def leaf(value: Any) -> Any:
        if isinstance(value, datetime.date | datetime.time):
            return value.isoformat()
        if isinstance(value, bytes):  # !!binary
            raise BadInputError("binary values (!!binary) are not data", file=str(path))
        return value

    root: list[Any] = [None]
    # (source, the container the copy goes into, its key or index, depth)
    stack: list[tuple[Any, Any, Any, int]] = [(data, root, 0, 0)]
    while stack:
        value, into, slot, depth = stack.pop()
        count += 1
        size += 1 + (len(value) if isinstance(value, str) else 0)
        if size > limit:
            raise BadInputError(
                f"more than {limit:,} characters once its aliases are expanded (the limit on "
                "a file's size, max_file_bytes in evalctl.toml or EVALCTL_MAX_FILE_BYTES)",
                file=str(path),
            )
        if count > MAX_YAML_VALUES:
            raise BadInputError(
                f"more than {MAX_YAML_VALUES:,} values once its aliases are expanded",
                file=str(path),
            )
        if depth > MAX_NESTING:
            raise _too_deep(path)
        if isinstance(value, dict):
            copy: Any = {}
            for key, item in value.items():
                name = leaf(key)
                size += len(name) if isinstance(name, str) else 0
                copy[name if isinstance(name, str) else str(name)] = None
                stack.append((item, copy, name if isinstance(name, str) else str(name), depth + 1))
        elif isinstance(value, list | tuple | set):
            copy = [None] * len(value)
            stack.extend((item, copy, i, depth + 1) for i, item in enumerate(value))
        else:
            copy = leaf(value)
        into[slot] = copy
    return root[0]


def _lone_surrogate(text: str) -> str | None:
    """The first lone surrogate in `text` as `\\udXXX`, or None. JSON's `"\\ud800"` and
    YAML's decode to one: a code point that is no character, which no UTF-8 writer (results,
    journal, a provider's request) can encode, so the row is refused where it is read."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"\\u{ord(text[exc.start]):04x}"
    return None


def _check_text(record: Record, path: Path) -> None:
    """Refuse a row holding a lone surrogate anywhere (a column's name, its value, or text
    nested in it), used or not, naming the file, the row and the column."""
    for column, value in record.values.items():
        stack: list[Any] = [column, value]
        while stack:
            item = stack.pop()
            bad = None
            if isinstance(item, str):
                bad = _lone_surrogate(item)
            elif isinstance(item, dict):
                stack.extend(item.keys())
                stack.extend(item.values())
            elif isinstance(item, list):
                stack.extend(item)
            if bad is not None:
                name = column.encode("utf-8", "backslashreplace").decode("ascii", "replace")
                raise BadInputError(
                    f"{record.where}, column {name!r}: holds a lone surrogate ({bad}), "
                    "which is not a character: write the character itself, or a pair "
                    "(\\ud83d\\ude00)",
                    file=str(path),
                )


def _record(item: Any, where: str, path: Path) -> Record:
    if not isinstance(item, dict):
        raise BadInputError(f"{where}: must be an object (a table of values)", file=str(path))
    return Record(where, item)


def _jsonl_records(text: str, path: Path) -> list[Record]:
    records = []
    # Lines end at "\n" only (a "\r" before it is JSON whitespace): str.splitlines() would
    # also split at U+2028, U+0085 and other characters a JSON string may hold as they are.
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadInputError(
                f"line {number}: invalid JSON: {exc.msg} at column {exc.colno}", file=str(path)
            ) from None
        except RecursionError:
            raise _too_deep(path) from None
        check_nesting(item, path)
        records.append(_record(item, f"line {number}", path))
    return records


def _csv_records(text: str, path: Path) -> list[Record]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise BadInputError("empty CSV file: the first line names the columns", file=str(path))
        header = [name.strip() for name in header]
        named: set[str] = set()  # a set, not header.count(): 50,000 columns cost n, not n²
        for name in header:
            if not name:
                raise BadInputError("line 1: a column has no name", file=str(path))
            if name in named:
                raise BadInputError(f"line 1: column {name!r} appears twice", file=str(path))
            named.add(name)
        records = []
        start = reader.line_num + 1
        for row in reader:
            if not row or row == [""]:  # a blank line
                start = reader.line_num + 1
                continue
            if len(row) != len(header):
                raise BadInputError(
                    f"line {start}: {len(row)} fields where the header has {len(header)}",
                    file=str(path),
                )
            records.append(Record(f"line {start}", dict(zip(header, row, strict=True))))
            start = reader.line_num + 1
    except csv.Error as exc:
        raise BadInputError(f"line {reader.line_num}: invalid CSV: {exc}", file=str(path)) from None
    return records
