"""`evalctl history import`: results folders into the store.

Each path is a results folder, a results.json, or a folder holding such folders (CI
artifacts, a matrix run's cells): every results.json below it is read, through the one
reader that upgrades every schema version evalctl reads (evalctl.results.io). The shards
of one sharded run found together are merged as `evalctl merge` merges them and stored as
one run; an incomplete set of shards is stored shard by shard.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evalctl.config import ModelPrice
from evalctl.errors import BadInputError
from evalctl.history.record import Provenance, record_run
from evalctl.history.store import Store
from evalctl.results.io import RESULTS_JSON, read_run
from evalctl.results.merge import merge_shards
from evalctl.results.models import RunResult


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


def import_paths(
    store: Store,
    paths: Sequence[Path],
    where: Provenance,
    *,
    prices: Mapping[str, ModelPrice] | None = None,
) -> list[Imported]:
    runs = [(file, read_run(file)) for file in results_files(paths)]
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
        merged = merge_shards(members, prices=prices)
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
        recorded = record_run(store, run, where, source=file.parent)
        done.append(
            Imported(recorded.key, run.run_id, str(file.parent), recorded.cases, recorded.new)
        )
    return done
