"""Which case keys a run selected.

A run narrowed with `--suite` or `--case` says nothing about the cases it did not select.
Without this, comparing it to a full baseline would call every unselected case orphaned,
and writing a baseline from it would silently drop their expectations.

Only an explicit selection narrows: `--suite` (or the configured default suites), `--case`,
`--feature`, `--meta` and `--shard`. Paths given with `--cases` say where suites live, not
which to run, so they do not: a run over `--cases DIR` is in scope for every baseline entry.

`RunSettings.suite_filter` holds the suites the user narrowed the run to (empty: all) and
`case_glob` the `--case` pattern, matched on the case id or the full key exactly like the
case loader does. `RunSettings.suites` (what ran) is deliberately not used: a suite file
deleted since the baseline must show up as orphaned cases, not as "not selected".

`--feature` and `--meta` select on what a case declares, and `--limit` on a case's place in
its suite, which a key alone does not say: a key the run does not hold counts as not selected
(a case deleted since the baseline is then not reported as orphaned by such a run; an
unfiltered run does).

A shard (`--shard i/n`) selects the keys that hash to it (evalctl.sharding), which is
decided by the key alone, so a deleted case still counts as orphaned in its own shard.
"""

from __future__ import annotations

from evalctl.cases.select import case_matches
from evalctl.results.models import RunResult
from evalctl.sharding import in_shard


def is_filtered(run: RunResult) -> bool:
    settings = run.settings
    return bool(
        settings.suite_filter
        or settings.case_glob
        or settings.shard
        or settings.feature_filter
        or settings.meta_filter
        or settings.limit is not None
    )


def in_scope(run: RunResult, key: str) -> bool:
    """True when `run`'s selection would have included the case `key` had it existed."""
    suite, _, case_id = key.partition("/")
    if run.settings.suite_filter and suite not in run.settings.suite_filter:
        return False
    shard = run.settings.shard
    if shard is not None and not in_shard(key, shard.index, shard.count):
        return False
    narrowed_by_case = run.settings.feature_filter or run.settings.meta_filter
    if (narrowed_by_case or run.settings.limit is not None) and not any(
        case.key == key for case in run.cases
    ):
        return False
    glob = run.settings.case_glob
    if glob:
        return case_matches(case_id, key, glob)
    return True
