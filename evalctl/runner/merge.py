"""Merging the shards of one run (`evalctl run --shard i/n` on n machines) into one result.

The merged file is what the unsharded run would have written, so one `evalctl compare`
gates the whole selection. Merging refuses (BadInputError, exit 2, naming the files) rather
than produce a result that mixes things:
- a file that is not a shard, or a shard that was interrupted (its missing cases would look
  like deleted ones);
- shards of different runs: another provider, model or model weights, evalctl version, or
  any setting the run records in its results (`runner.recorded.shard_shared`: repeats and
  samples, timeout, sampling, selection, suite versions, gates...) but the few a shard may
  have of its own (its index, its first sample seed, its pause between cases); the platform
  may differ: shards can run on different machines, and the merged platform keeps what
  they share;
- two files for the same shard, a case present in two files, a missing shard, or a case in
  a shard that does not own it.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evalctl.config import ModelPrice
from evalctl.errors import BadInputError
from evalctl.results.models import RUN_SCHEMA_VERSION, CaseResult, RunResult
from evalctl.results.platform import common_platform
from evalctl.results.summary import summarize
from evalctl.runner.recorded import shard_shared
from evalctl.sharding import in_shard

# What made the replies, beside the settings: the shards of one run share it too.
_MADE_BY = ("provider.name", "provider.model", "provider.model_sha256", "evalctl_version")


def _get(run: RunResult, dotted: str) -> Any:
    value: Any = run
    for part in dotted.split("."):
        value = getattr(value, part)
    return value


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def merge_shards(
    shards: Sequence[tuple[Path, RunResult]],
    *,
    prices: Mapping[str, ModelPrice] | None = None,
) -> RunResult:
    """One RunResult from the shards of a run, with cases in the unsharded run's order."""
    if not shards:
        raise BadInputError("nothing to merge: give the shards' run directories")
    for path, run in shards:
        if run.settings.shard is None:
            raise BadInputError(
                "not a shard (run without --shard i/n)", file=str(path), field="settings.shard"
            )
        if run.interrupted:
            raise BadInputError(
                "this shard was interrupted, so some of its cases never ran",
                file=str(path),
                field="interrupted",
                hint="finish it with `evalctl run --resume RUN_DIR`, then merge",
            )
    first_path, first = shards[0]
    same = (*_MADE_BY, *shard_shared())
    for path, run in shards[1:]:
        for field in same:
            mine, theirs = _get(first, field), _get(run, field)
            if mine != theirs:
                raise BadInputError(
                    f"shards of different runs: {field} is {_show(mine)} in {first_path} "
                    f"but {_show(theirs)} here",
                    file=str(path),
                    field=field,
                )

    owner: dict[int, Path] = {}
    where: dict[str, Path] = {}
    found: dict[str, CaseResult] = {}
    first_shard = first.settings.shard
    assert first_shard is not None  # checked above
    count = first_shard.count
    for path, run in shards:
        shard = run.settings.shard
        assert shard is not None
        if shard.index in owner:
            raise BadInputError(
                f"both {owner[shard.index]} and {path} are shard {shard.index}/{count}",
                file=str(path),
                field="settings.shard.index",
            )
        owner[shard.index] = path
        for case in run.cases:
            if case.key in where:
                raise BadInputError(
                    f"case {case.key!r} is in both {where[case.key]} and {path}",
                    file=str(path),
                    case_id=case.key,
                )
            if not in_shard(case.key, shard.index, count):
                raise BadInputError(
                    f"case {case.key!r} does not belong to shard {shard.index}/{count}",
                    file=str(path),
                    case_id=case.key,
                )
            where[case.key] = path
            found[case.key] = case
    missing = sorted(set(range(1, count + 1)) - set(owner))
    if missing:
        raise BadInputError(
            f"missing shard{'s' if len(missing) > 1 else ''} "
            f"{', '.join(f'{i}/{count}' for i in missing)}: merged results would lack "
            "their cases",
            hint="pass every shard's run directory",
        )
    selection = first_shard.selection
    absent = [key for key in selection if key not in found]
    if absent:
        raise BadInputError(
            f"{len(absent)} selected cases are in no shard ({', '.join(absent[:5])})",
            file=str(where.get(absent[0], first_path)),
        )
    stray = sorted(set(found) - set(selection))
    if stray:
        raise BadInputError(
            f"cases outside the run's selection: {', '.join(stray[:5])}",
            file=str(where[stray[0]]),
            case_id=stray[0],
        )

    cases = [found[key] for key in selection]
    finished = [r.finished_at for _, r in shards if r.finished_at]
    return first.model_copy(
        update={
            "run_id": _merged_run_id(first.provider.name),
            "started_at": min(r.started_at for _, r in shards),
            "finished_at": max(finished) if finished else None,
            "settings": first.settings.model_copy(update={"shard": None}),
            "cases": cases,
            "system_prompts": {k: v for _, r in shards for k, v in r.system_prompts.items()},
            "platform": common_platform([r.platform for _, r in shards]),
            # A merge of version 1 shards is written in today's format.
            "schema_version": RUN_SCHEMA_VERSION,
            "summary": summarize(
                cases, first.provider.name, model=first.provider.model, prices=prices
            ),
        },
        deep=True,
    )


MERGED_MARK = "-merged-"


def _merged_run_id(provider: str) -> str:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    return f"{stamp}-{provider}{MERGED_MARK}{secrets.token_hex(2)}"


def is_merged(run_id: str) -> bool:
    """Whether a run id was given by `merge`, which names the same shards afresh each time."""
    return MERGED_MARK in run_id
