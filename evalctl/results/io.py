"""Writing and reading run results.

JSON is the canonical form; TOML is a rendering for people who prefer it (nulls written as
`{"$null" = true}`, see `to_toml`). Every file is
written atomically: a temp file in the target directory, fsync'd, then `os.replace`d over
the target, so a crash or Ctrl-C leaves either the old file or the new one, never half of
one (a half-written results file would later fail `compare` as truncated JSON).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evalctl import userfiles
from evalctl.errors import BadInputError, EvalctlError, InfraError
from evalctl.results.document import (
    Document,
    check_schema_version,
    load_document,
    require_kind,
    validate_document,
)
from evalctl.results.models import RunResult
from evalctl.results.versions import supported, upgrade
from evalctl.secrets import redact

RESULTS_JSON = "results.json"
RESULTS_TOML = "results.toml"
# Every older version still reads, upgraded when read (the table in results.versions).
SUPPORTED_RUN_VERSIONS: tuple[int, ...] = supported("run")

# Errors that mean the path given names the wrong thing (a directory where a file goes, a
# path through a file): bad input. Permissions, read-only mounts and full disks are the
# environment's (exit 3, userfiles.environment_error).
_SHAPE_ERRNOS = {errno.ENOTDIR, errno.EISDIR, errno.ENOENT, errno.EEXIST}


def write_text_atomic(path: Path, text: str) -> None:
    """Replace `path` with `text` atomically; the directory must exist.

    Every file evalctl writes goes through here, so API keys are redacted at this one point.
    """
    text = redact(text)
    if path.exists() and not path.is_file():
        # /dev/null, /dev/stdout, a FIFO: written to, never replaced. A rename over a device
        # node, as root, would put a regular file where /dev/null was, breaking every program
        # on the machine that writes to it (apt among them).
        try:
            with open(path, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
        except OSError as exc:
            raise _write_error(path, exc) from None
        return
    directory = path.parent
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise _write_error(path, exc) from None
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600; results and baselines are ordinary shareable files.
        tmp.chmod(_mode_for(path))
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise _write_error(path, exc) from None
        raise
    _fsync_dir(directory)


def write_json_atomic(path: Path, model: BaseModel) -> None:
    """Canonical JSON: the model's field order, two-space indent, UTF-8, trailing newline.

    pydantic's own serialiser is used because it writes NaN/inf as null, keeping the file
    valid JSON where `json.dumps` would emit bare `NaN`.
    """
    write_text_atomic(path, model.model_dump_json(indent=2) + "\n")


# TOML has no null. Rather than drop nulls (which would turn `[null, "x"]` into `["x"]` and
# make a missing key mean two things), each null is written as this one-key inline table.
NULL_MARKER = "$null"
TOML_HEADER = (
    "# evalctl results, rendered as TOML; the .json file beside it is the canonical form.\n"
    '# TOML has no null: a null value is written as {"$null" = true} (results.io.from_toml\n'
    "# reads it back as null).\n\n"
)


def to_toml(model: BaseModel) -> str:
    """Render `model` as TOML, nulls as `{"$null" = true}` at every depth (see NULL_MARKER),
    under a comment saying so."""
    # Nulls are marked as they are written (dumps_toml), not in a copy of the whole tree:
    # for 10,000 cases that copy was a large share of the run's peak memory.
    return TOML_HEADER + dumps_toml(json.loads(model.model_dump_json()))


# A key TOML takes bare; any other is written as a quoted string.
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
# What a TOML basic string may not hold as is, beyond what JSON escapes: DEL.
_DEL = "\x7f"


def dumps_toml(data: dict[str, Any]) -> str:
    """TOML for JSON-shaped data (dicts, lists, str, int, float, bool, None): `from_toml`
    reads it back equal, each None having been written as the null marker. Written here, not
    by tomli_w, which spent 2.4 s on the results of 1,000 cases (issue 41): this one is
    several times faster (benchmarks/bench_scale.py).
    Nested dicts become [tables] and lists of dicts [[arrays of tables]], as tomli_w lays
    them out; any other list is written inline, on one line."""
    out: list[str] = []
    _table(out, (), data, header=False, array=False)
    return "".join(out)


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _string(text: str) -> str:
    # JSON's escapes are TOML's, \uXXXX included; DEL is a control character TOML refuses.
    quoted = json.dumps(text, ensure_ascii=False)
    return quoted.replace(_DEL, "\\u007f") if _DEL in quoted else quoted


_NULL = f'{{ "{NULL_MARKER}" = true }}'


def _inline(value: Any) -> str:
    if value is None:
        return _NULL
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "nan"
        if value in (float("inf"), float("-inf")):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_inline(v) for v in value) + "]"
    if isinstance(value, dict):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_key(k)} = {_inline(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML for {type(value).__name__}")


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _table(
    out: list[str], path: tuple[str, ...], table: dict[str, Any], *, header: bool, array: bool
) -> None:
    nested = []
    if header:
        name = ".".join(_key(p) for p in path)
        out.append(f"\n[[{name}]]\n" if array else f"\n[{name}]\n")
    for key, value in table.items():
        # A null's marker stays on its key's line, not a table of its own.
        if (isinstance(value, dict) and value and value != {NULL_MARKER: True}) or (
            _is_table_array(value)
        ):
            nested.append((key, value))
        else:
            out.append(f"{_key(key)} = {_inline(value)}\n")
    for key, value in nested:
        if isinstance(value, dict):
            _table(out, (*path, key), value, header=True, array=False)
        else:
            for item in value:
                _table(out, (*path, key), item, header=True, array=True)


def from_toml(text: str) -> Any:
    """Parse TOML written by `to_toml`, turning the null markers back into None."""
    return unmark_nulls(tomllib.loads(text))


def write_toml_atomic(path: Path, model: BaseModel) -> None:
    write_text_atomic(path, to_toml(model))


def mark_nulls(value: Any) -> Any:
    """Replace None with the null marker, in dicts and lists, recursively."""
    if value is None:
        return {NULL_MARKER: True}
    if isinstance(value, dict):
        return {k: mark_nulls(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mark_nulls(v) for v in value]
    return value


def unmark_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        if value == {NULL_MARKER: True}:
            return None
        return {k: unmark_nulls(v) for k, v in value.items()}
    if isinstance(value, list):
        return [unmark_nulls(v) for v in value]
    return value


def write_run(result: RunResult, out_dir: Path) -> Path:
    """Write `results.json` (canonical) and `results.toml` into `out_dir`; return the JSON path.

    The TOML is written first so that `results.json`, which `compare` reads, appearing means
    the whole write completed.
    """
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _write_error(out_dir, exc) from None
    write_toml_atomic(out_dir / RESULTS_TOML, result)
    json_path = out_dir / RESULTS_JSON
    write_json_atomic(json_path, result)
    return json_path


def read_run(path: Path) -> RunResult:
    """Read run results from a `results.json` (or a directory holding one).

    Raises BadInputError naming the file, the case key and the field for a missing file,
    truncated JSON, a baseline or other document given instead, an unknown schema_version,
    wrong types and unknown keys. A file of an older version is upgraded as it is read.
    """
    return run_from_document(load_document(path))


def run_from_document(doc: Document) -> RunResult:
    """Validate an already loaded document as run results (see `read_run`), upgraded first
    to the current version (results.versions)."""
    require_kind(doc, "run")
    check_schema_version(doc, SUPPORTED_RUN_VERSIONS)
    current = Document(path=doc.path, data=upgrade("run", doc.data))
    return validate_document(current, RunResult, case_list="cases")


def _mode_for(path: Path) -> int:
    # Keep the mode of a file being replaced (someone may have tightened it on purpose).
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        return 0o644


def _fsync_dir(directory: Path) -> None:
    # Makes the rename itself durable. Some filesystems refuse fsync on a directory; the
    # data is already safe by then, so that is not worth failing the write for.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_error(path: Path, exc: OSError) -> EvalctlError:
    reason = exc.strerror or str(exc)
    if exc.errno in _SHAPE_ERRNOS:
        return BadInputError(f"cannot write: {reason}", file=str(path))
    # Full disk, read-only mount, no permission: the machine's to fix, with a hint how.
    return userfiles.environment_error(exc, "write", path) or InfraError(
        f"cannot write {path}: {reason}"
    )
