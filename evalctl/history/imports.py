"""`evalctl history import`: results folders into the store.

Each path is a results folder, a results.json, or a folder holding such folders (CI
artifacts, a matrix run's cells): every results.json below it is read, through the one
reader that upgrades every schema version evalctl reads (evalctl.results.io). The shards
of one sharded run found together are merged as `evalctl merge` merges them and stored as
one run; an incomplete set of shards is stored shard by shard.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationError, create_model

from evalctl import userfiles
from evalctl.config import ModelPrice
from evalctl.errors import BadInputError
from evalctl.history.record import Provenance, Talk, record_run
from evalctl.history.store import Store
from evalctl.results.document import (
    Document,
    check_schema_version,
    require_kind,
    resolve_results_path,
    validate_document,
)
from evalctl.results.io import RESULTS_JSON, SUPPORTED_RUN_VERSIONS, read_run
from evalctl.results.models import SCORED, CaseResult, RunResult
from evalctl.results.scores import _not_bool
from evalctl.results.versions import upgrade
from evalctl.runner.merge import merge_shards


@dataclass(frozen=True)
class Imported:
    key: str
    run_id: str
    source: str
    cases: int
    new: bool
    shards: int = 0


def results_files(paths: Sequence[Path]) -> list[Path]:
    """Every results.json the paths name, in order, each once."""
    found: list[Path] = []
    for path in paths:
        if path.is_file():
            found.append(path)
        elif (path / RESULTS_JSON).is_file():
            found.append(path / RESULTS_JSON)
        elif path.is_dir():
            below = sorted(path.rglob(RESULTS_JSON))
            if not below:
                raise BadInputError(f"no {RESULTS_JSON} in or below this folder", file=str(path))
            found.extend(below)
        else:
            raise BadInputError("no such file or folder", file=str(path))
    unique: dict[Path, None] = {}
    for file in found:
        unique.setdefault(file.resolve(), None)
    return list(unique)


def _shard_group(run: RunResult) -> tuple[object, ...] | None:
    shard = run.settings.shard
    if shard is None or run.interrupted:
        return None
    return (
        run.provider.name,
        run.provider.model,
        run.evalctl_version,
        shard.count,
        tuple(shard.selection),
        run.settings.prompt_template,
    )


# A case's conversation as `history import` keeps it: taken as the file holds it, not
# validated (the store keeps it as it is on disk).
_TALK_FIELDS = ("transcript", "tool_calls", "output")


@cache
def _lean_run() -> type[RunResult]:
    """`RunResult` whose cases take their transcript and tool calls as plain JSON lists,
    parsed in pydantic-core and never built as models (the fast path of `read_for_import`)."""
    talk: dict[str, Any] = {
        name: (list[Any], Field(default_factory=list)) for name in ("transcript", "tool_calls")
    }
    lean_case = create_model("_ImportedCase", __base__=CaseResult, **talk)
    version = RunResult.model_fields["schema_version"].annotation
    run_fields: dict[str, Any] = {
        "cases": (list[lean_case], Field(default_factory=list)),
        # Required and strict, as the general reader has it (`true` is not a version).
        "schema_version": (Annotated[version, BeforeValidator(_not_bool)], ...),
    }
    lean: type[RunResult] = create_model("_ImportedRun", __base__=RunResult, **run_fields)
    return lean


def _read_fast(raw: bytes) -> tuple[RunResult, list[Talk]] | None:
    """The file's run and conversations, validated from its bytes in pydantic-core (about
    twice as fast as json.loads and then validating); None wherever this path cannot vouch
    for giving what the general one gives, and the caller then reads the file the general
    way: an older version (which fails the current `schema_version` here, and which that
    one upgrades), a scored case without attempts, a `\\uD...` escape (which it checks),
    anything invalid (which it words)."""
    if b"\\ud" in raw or b"\\uD" in raw:
        return None
    try:
        lean = _lean_run().model_validate_json(raw)
    except (ValidationError, ValueError, RecursionError):
        return None
    talks: list[Talk] = []
    dropped = frozenset(_TALK_FIELDS)
    for case in lean.cases:
        if case.status in SCORED and not case.attempts:
            return None
        values = case.__dict__
        talks.append(Talk(values["transcript"], values["tool_calls"], values["output"]))
        values.update(transcript=[], tool_calls=[], output="")
        # Made the real model in place (the lean one only retypes two fields): what the
        # general reader builds, the conversation at its defaults and not counted as set,
        # at a fraction of `model_construct`'s cost per case.
        object.__setattr__(case, "__pydantic_fields_set__", case.__pydantic_fields_set__ - dropped)
        object.__setattr__(case, "__class__", CaseResult)
    object.__setattr__(lean, "__class__", RunResult)
    return lean, talks


def read_for_import(path: Path) -> tuple[RunResult, list[Talk]]:
    """A results file as `read_run` reads it (every version, upgraded; the same located
    errors), except its conversations: they are taken apart as the file holds them and not
    validated, which would cost most of the time (they are most of a results file), since
    the store keeps them as they are on disk."""
    path = resolve_results_path(path)
    fast = _read_fast(userfiles.read_bytes(path))
    if fast is not None:
        return fast
    text = userfiles.read_text(path)
    # The lone-surrogate check scans the text with a regular expression, the slowest step
    # of a read: it runs only where an escape that could be one appears at all.
    suspect = "\\ud" in text or "\\uD" in text
    data = userfiles.parse_json(text, path, nesting=False, text_check=suspect)
    if not isinstance(data, dict):
        raise BadInputError("expected a JSON object at the top level", file=str(path))
    doc = Document(path=path, data=data)
    require_kind(doc, "run")
    check_schema_version(doc, SUPPORTED_RUN_VERSIONS)
    data = upgrade("run", data)
    talks: list[Talk] = []
    cases = data.get("cases")
    if isinstance(cases, list):
        for case in cases:
            if not isinstance(case, dict):
                break
            transcript = case.pop("transcript", None)
            tool_calls = case.pop("tool_calls", None)
            talks.append(
                Talk(
                    transcript if isinstance(transcript, list) else [],
                    tool_calls if isinstance(tool_calls, list) else [],
                    str(case.pop("output", "") or ""),
                )
            )
    # No depth check: json.loads bounds the depth it reads (RecursionError, refused), and
    # what is stored is dumped back as read.
    run = validate_document(Document(path=path, data=data), RunResult, case_list="cases")
    return run, talks


def import_paths(
    store: Store,
    paths: Sequence[Path],
    where: Provenance,
    *,
    prices: Mapping[str, ModelPrice] | None = None,
) -> list[Imported]:
    """Import every run the paths hold (see the module's docstring); returns each one."""
    # Reading a big run makes millions of objects, none of them garbage; the cyclic
    # collector would walk them all again and again (as in `compare`, evalctl.cli.compare).
    paused = gc.isenabled()
    gc.disable()
    try:
        return _import_paths(store, paths, where, prices)
    finally:
        if paused:
            gc.enable()


def _import_paths(
    store: Store,
    paths: Sequence[Path],
    where: Provenance,
    prices: Mapping[str, ModelPrice] | None,
) -> list[Imported]:
    files = results_files(paths)
    read = {file: read_for_import(file) for file in files}
    runs = [(file, read[file][0]) for file in files]
    groups: dict[tuple[object, ...], list[tuple[Path, RunResult]]] = {}
    for file, run in runs:
        group = _shard_group(run)
        if group is not None:
            groups.setdefault(group, []).append((file, run))
    merged_files: set[Path] = set()
    done: list[Imported] = []
    for members in groups.values():
        count = members[0][1].settings.shard.count if members[0][1].settings.shard else 0
        indices = sorted(r.settings.shard.index for _, r in members if r.settings.shard)
        if count < 2 or indices != list(range(1, count + 1)):
            continue  # not every shard is here (or one is twice): each is stored as it is
        members.sort(key=lambda m: m[1].settings.shard.index if m[1].settings.shard else 0)
        # Merged as `evalctl merge` merges them, conversations included.
        merged = merge_shards([(file, read_run(file)) for file, _ in members], prices=prices)
        recorded = record_run(store, merged, where, source=members[0][0].parent)
        merged_files.update(file for file, _ in members)
        sources = ", ".join(str(file.parent) for file, _ in members)
        done.append(
            Imported(
                recorded.key, merged.run_id, sources, recorded.cases, recorded.new, len(members)
            )
        )
    for file, run in runs:
        if file in merged_files:
            continue
        recorded = record_run(store, run, where, source=file.parent, talks=read[file][1])
        done.append(
            Imported(recorded.key, run.run_id, str(file.parent), recorded.cases, recorded.new)
        )
    return done
