"""The questions asked of a run store, each a function returning typed records.

This is the store's read API: `evalctl history` prints these records (`--json` dumps them)
and `evalctl view` renders them. Every function takes an open `Store` (evalctl.history.store)
and only reads. Runs are named by `id` (the store's key: a content hash of the results) or
by their `run_id` (the results folder's); `get_run` takes either.
"""

from __future__ import annotations

import json
import zlib
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict, Field

from evalctl.history import analysis
from evalctl.history.analysis import Point
from evalctl.history.store import Store
from evalctl.results.models import SCORED
from evalctl.stats import wilson_interval


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunSummary(_Record):
    """One stored run, as `history list` shows it."""

    id: str  # the store's key for the run
    run_id: str
    started_at: str
    finished_at: str | None = None
    recorded_at: str
    provider: str
    model: str
    prompt_variant: str = ""
    suites: list[str] = Field(default_factory=list)
    git_commit: str | None = None
    git_branch: str | None = None
    git_dirty: bool | None = None
    ci_run_id: str | None = None
    ci_url: str | None = None
    source: str | None = None
    shard: str | None = None
    interrupted: bool = False
    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    pass_rate: float | None = None
    latency_p50: float | None = None
    latency_p95: float | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None


class CheckRecord(_Record):
    name: str
    status: str
    expected: Any = None
    actual: Any = None
    message: str = ""


class CaseRecord(_Record):
    """One case of one stored run."""

    key: str
    suite: str
    case_id: str
    status: str
    pass_rate: float | None = None
    passed: int = 0
    samples: int = 0
    latency_ms: float = 0.0
    tokens_in: int = 0
    tokens_out: int = 0
    checks: list[CheckRecord] = Field(default_factory=list)
    error: str | None = None
    output: str = ""
    definition_hash: str = ""
    transcript_hash: str | None = None
    # Filled by `get_run(..., transcripts=True)`: the stored conversation (redacted as on
    # disk): `system_prompt`, `transcript` (TurnRecord dicts), `tool_calls`.
    transcript: Transcript | None = None


class Transcript(_Record):
    system_prompt: str | None = None
    transcript: list[dict[str, Any]] = Field(default_factory=list)
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)


class RunDetail(_Record):
    """A run with its header and cases (`history`'s view of one results folder)."""

    run: RunSummary
    suite_hashes: dict[str, str] = Field(default_factory=dict)
    sampling: dict[str, Any] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)
    platform: dict[str, Any] | None = None
    environment: dict[str, Any] | None = None
    cases: list[CaseRecord] = Field(default_factory=list)


class CaseRun(_Record):
    """One run of a case, in its history."""

    run: str  # RunSummary.id
    run_id: str
    started_at: str
    git_commit: str | None = None
    git_branch: str | None = None
    status: str
    pass_rate: float | None = None
    passed: int = 0
    samples: int = 0
    latency_ms: float = 0.0
    definition_hash: str = ""
    # The case's definition differs from its previous run's here (an edit of the suite).
    definition_changed: bool = False
    # This is the first run after the case's changepoint (`changes`).
    changepoint: bool = False


class Change(_Record):
    """A case whose pass rate changed for good: the first run after the change."""

    suite: str
    case_id: str
    provider: str
    model: str
    prompt_variant: str = ""
    run: str  # RunSummary.id of the first run after the change
    run_id: str
    started_at: str
    git_commit: str | None = None
    git_branch: str | None = None
    direction: str  # "drop" or "rise"
    before_passed: int
    before_samples: int
    after_passed: int
    after_samples: int
    # Fisher's exact one-sided p-value at this split, and Bonferroni-corrected over the
    # split points, both directions and the cases searched (docs/history.md).
    p_value: float
    adjusted_p: float
    split_points: int
    cases_searched: int
    # The case's definition differs between its last run before and this one.
    definition_changed: bool = False


class CaseHistory(_Record):
    """A case's runs with one provider, model, prompt variant and sampling, oldest first."""

    suite: str
    case_id: str
    provider: str
    model: str
    prompt_variant: str = ""
    sampling: str = ""
    runs: list[CaseRun] = Field(default_factory=list)
    change: Change | None = None
    # Other (provider, model, prompt variant, sampling) the store holds runs of this case
    # with, each as "provider/model" plus variant and sampling where set.
    others: list[str] = Field(default_factory=list)

    @property
    def strip(self) -> str:
        """One character per run: `.` pass, `x` fail, `~` flaky, `E` error, `-` skipped."""
        return "".join(STRIP.get(r.status, "?") for r in self.runs)


STRIP = {"pass": ".", "fail": "x", "flaky": "~", "error": "E", "skipped": "-"}


class FlakyCase(_Record):
    suite: str
    case_id: str
    provider: str
    model: str
    prompt_variant: str = ""
    runs: int
    flips: int
    passed: int
    samples: int
    pass_rate: float
    ci_low: float
    ci_high: float
    last_status: str
    last_run: str


class TrendPoint(_Record):
    """One run of a suite, in its trend."""

    run: str
    run_id: str
    started_at: str
    git_commit: str | None = None
    provider: str
    model: str
    total: int
    passed: int
    scored: int
    pass_rate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    latency_p50: float | None = None
    latency_p95: float | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None


class LatestCase(_Record):
    """Every case's latest status (per provider, model and prompt variant)."""

    suite: str
    case_id: str
    provider: str
    model: str
    prompt_variant: str = ""
    status: str
    pass_rate: float | None = None
    run: str
    run_id: str
    started_at: str
    runs: int
    change: Change | None = None


class VerdictRecord(_Record):
    """A recorded `baseline`, `compare`, `soak` or `crash-test` verdict."""

    id: str
    kind: str
    recorded_at: str
    subject: str
    outcome: str
    exit_code: int
    run: str | None = None
    git_commit: str | None = None
    git_branch: str | None = None
    ci_url: str | None = None
    body: dict[str, Any] = Field(default_factory=dict)


_RUN_COLUMNS = (
    "run_key, run_id, started_at, finished_at, recorded_at, provider, model, prompt_variant, "
    "suites, git_commit, git_branch, git_dirty, ci_run_id, ci_url, source, shard, interrupted, "
    "total, passed, failed, errors, skipped, pass_rate, latency_p50, latency_p95, tokens_in, "
    "tokens_out, cost_usd"
)


def _summary(row: Sequence[Any]) -> RunSummary:
    (key, run_id, started, finished, recorded, provider, model, variant, suites, commit,
     branch, dirty, ci_id, ci_url, source, shard, interrupted, total, passed, failed, errors,
     skipped, rate, p50, p95, tin, tout, cost) = row  # fmt: skip
    return RunSummary(
        id=key,
        run_id=run_id,
        started_at=started,
        finished_at=finished,
        recorded_at=recorded,
        provider=provider,
        model=model,
        prompt_variant=variant,
        suites=json.loads(suites),
        git_commit=commit,
        git_branch=branch,
        git_dirty=None if dirty is None else bool(dirty),
        ci_run_id=ci_id,
        ci_url=ci_url,
        source=source,
        shard=shard,
        interrupted=bool(interrupted),
        total=total,
        passed=passed,
        failed=failed,
        errors=errors,
        skipped=skipped,
        pass_rate=rate,
        latency_p50=p50,
        latency_p95=p95,
        tokens_in=tin,
        tokens_out=tout,
        cost_usd=cost,
    )


class _Where:
    def __init__(self) -> None:
        self.clauses: list[str] = []
        self.params: list[Any] = []

    def add(self, clause: str, value: Any) -> None:
        if value is not None:
            self.clauses.append(clause)
            self.params.append(value)

    def sql(self) -> str:
        return (" WHERE " + " AND ".join(self.clauses)) if self.clauses else ""


def _run_filter(
    suite: str | None,
    provider: str | None,
    model: str | None,
    branch: str | None,
    since: str | None,
) -> _Where:
    where = _Where()
    where.add("run_key IN (SELECT run_key FROM run_suites WHERE suite = ?)", suite)
    where.add("provider = ?", provider)
    where.add("model = ?", model)
    where.add("git_branch = ?", branch)
    where.add("started_at >= ?", since)
    return where


def list_runs(
    store: Store,
    *,
    suite: str | None = None,
    provider: str | None = None,
    model: str | None = None,
    branch: str | None = None,
    since: str | None = None,
    limit: int | None = 100,
    offset: int = 0,
) -> list[RunSummary]:
    """Stored runs, newest first. `since`: an ISO date or timestamp (UTC), compared with
    the run's start."""
    where = _run_filter(suite, provider, model, branch, since)
    page = ""
    params = list(where.params)
    if limit is not None:
        page = " LIMIT ? OFFSET ?"
        params += [int(limit), int(offset)]
    rows = store.query(
        f"SELECT {_RUN_COLUMNS} FROM runs{where.sql()} "
        f"ORDER BY started_at DESC, run_key DESC{page}",
        params,
    )
    return [_summary(r) for r in rows]


def count_runs(
    store: Store,
    *,
    suite: str | None = None,
    provider: str | None = None,
    model: str | None = None,
    branch: str | None = None,
    since: str | None = None,
) -> int:
    where = _run_filter(suite, provider, model, branch, since)
    return int(store.query(f"SELECT COUNT(*) FROM runs{where.sql()}", where.params)[0][0])


def _find_run(store: Store, run: str) -> Sequence[Any] | None:
    rows = store.query(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_key = ?", [run])
    if not rows:
        rows = store.query(
            f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ? ORDER BY recorded_at DESC LIMIT 1",
            [run],
        )
    return rows[0] if rows else None


_CASE_COLUMNS = (
    "case_key, suite, case_id, status, pass_rate, passed, samples, latency_ms, tokens_in, "
    "tokens_out, checks, error, output, definition_hash, transcript_hash"
)


def get_run(store: Store, run: str, *, transcripts: bool = True) -> RunDetail | None:
    """A run by its id or run_id, with its cases and checks (and transcripts, unless
    `transcripts=False`); None when the store has no such run."""
    row = _find_run(store, run)
    if row is None:
        return None
    summary = _summary(row)
    header = store.query(
        "SELECT suite_hashes, sampling, settings, platform, environment FROM runs "
        "WHERE run_key = ?",
        [summary.id],
    )[0]
    case_rows = store.query(
        f"SELECT {_CASE_COLUMNS} FROM cases WHERE run_key = ? ORDER BY suite, case_id",
        [summary.id],
    )
    cases = [_case_record(r) for r in case_rows]
    if transcripts:
        blobs = _blobs(store, [c.transcript_hash for c in cases if c.transcript_hash])
        for case in cases:
            if case.transcript_hash in blobs:
                case.transcript = blobs[case.transcript_hash]
    return RunDetail(
        run=summary,
        suite_hashes=json.loads(header[0]),
        sampling=json.loads(header[1]),
        settings=json.loads(header[2]),
        platform=json.loads(header[3]) if header[3] else None,
        environment=json.loads(header[4]) if header[4] else None,
        cases=cases,
    )


def _case_record(row: Sequence[Any]) -> CaseRecord:
    (key, suite, case_id, status, rate, passed, samples, latency, tin, tout, checks, error,
     output, definition, transcript) = row  # fmt: skip
    return CaseRecord(
        key=key,
        suite=suite,
        case_id=case_id,
        status=status,
        pass_rate=rate,
        passed=passed,
        samples=samples,
        latency_ms=latency,
        tokens_in=tin,
        tokens_out=tout,
        checks=[CheckRecord(**c) for c in json.loads(checks)],
        error=error,
        output=output,
        definition_hash=definition,
        transcript_hash=transcript,
    )


def get_transcript(store: Store, transcript_hash: str) -> Transcript | None:
    return _blobs(store, [transcript_hash]).get(transcript_hash)


def _blobs(store: Store, hashes: Sequence[str]) -> dict[str, Transcript]:
    found: dict[str, Transcript] = {}
    unique = sorted(set(hashes))
    for start in range(0, len(unique), 500):
        chunk = unique[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        for key, data in store.query(
            f"SELECT hash, data FROM blobs WHERE hash IN ({marks})", chunk
        ):
            found[key] = Transcript(**json.loads(zlib.decompress(bytes(data))))
    return found


_HISTORY_COLUMNS = (
    "c.run_key, r.run_id, c.started_at, r.git_commit, r.git_branch, c.status, c.pass_rate, "
    "c.passed, c.samples, c.latency_ms, c.definition_hash"
)


def case_history(
    store: Store,
    suite: str,
    case_id: str,
    *,
    provider: str | None = None,
    model: str | None = None,
    last: int | None = None,
    since: str | None = None,
) -> CaseHistory | None:
    """A case's runs, oldest first, with one provider and model (those of its latest run
    unless given); None when the store has no run of the case."""
    where = _Where()
    where.add("suite = ?", suite)
    where.add("case_id = ?", case_id)
    where.add("provider = ?", provider)
    where.add("model = ?", model)
    keys = store.query(
        "SELECT history_key, provider, model, prompt_variant, sampling_key, MAX(started_at) "
        f"FROM cases{where.sql()} GROUP BY history_key, provider, model, prompt_variant, "
        "sampling_key ORDER BY MAX(started_at) DESC",
        where.params,
    )
    if not keys:
        return None
    history_key, prov, mod, variant, sampling, _ = keys[0]
    params: list[Any] = [history_key]
    since_sql = ""
    if since is not None:
        since_sql = " AND c.started_at >= ?"
        params.append(since)
    rows = store.query(
        f"SELECT {_HISTORY_COLUMNS} FROM cases c JOIN runs r ON r.run_key = c.run_key "
        f"WHERE c.history_key = ?{since_sql} ORDER BY c.started_at, c.run_key",
        params,
    )
    read = _case_runs(rows)
    change = _change_of(suite, case_id, prov, mod, variant, read, cases_searched=1)
    runs = [
        CaseRun(**r._asdict(), changepoint=change is not None and r.run == change.run) for r in read
    ]
    if last is not None:
        runs = runs[-last:] if last > 0 else []
    return CaseHistory(
        suite=suite,
        case_id=case_id,
        provider=prov,
        model=mod,
        prompt_variant=variant,
        sampling=sampling,
        runs=runs,
        change=change,
        others=[_label(k[1], k[2], k[3], k[4]) for k in keys[1:]],
    )


def _label(provider: str, model: str, variant: str, sampling: str) -> str:
    parts = [f"{provider}/{model}"]
    if variant:
        parts.append(f"variant {variant}")
    if sampling:
        parts.append(f"sampling {sampling}")
    return ", ".join(parts)


class _Run(NamedTuple):
    """A case's run as the questions read it: CaseRun's fields, without a model's cost
    (a long history's runs are many, and only the reported ones become records)."""

    run: str
    run_id: str
    started_at: str
    git_commit: str | None
    git_branch: str | None
    status: str
    pass_rate: float | None
    passed: int
    samples: int
    latency_ms: float
    definition_hash: str
    definition_changed: bool


def _case_runs(rows: Sequence[Sequence[Any]]) -> list[_Run]:
    runs: list[_Run] = []
    previous: str | None = None
    for key, run_id, started, commit, branch, status, rate, passed, samples, latency, d in rows:
        changed = bool(previous) and bool(d) and previous != d
        runs.append(
            _Run(
                key,
                run_id,
                started,
                commit,
                branch,
                status,
                rate,
                passed,
                samples,
                latency,
                d,
                changed,
            )
        )
        previous = d or previous
    return runs


def _points(runs: Sequence[_Run]) -> list[Point]:
    return [Point(r.status, r.passed, r.samples, r.definition_hash) for r in runs]


def _change_of(
    suite: str,
    case_id: str,
    provider: str,
    model: str,
    variant: str,
    runs: Sequence[_Run],
    *,
    cases_searched: int,
    alpha: float = analysis.DEFAULT_ALPHA,
) -> Change | None:
    split = analysis.best_split(_points(runs))
    if split is None:
        return None
    p_adj = analysis.adjusted(split, cases_searched)
    if p_adj > alpha:
        return None
    first = runs[split.index]
    scored_before = [i for i in range(split.index) if runs[i].status in SCORED]
    since_last = runs[scored_before[-1] + 1 if scored_before else 0 : split.index + 1]
    return Change(
        suite=suite,
        case_id=case_id,
        provider=provider,
        model=model,
        prompt_variant=variant,
        run=first.run,
        run_id=first.run_id,
        started_at=first.started_at,
        git_commit=first.git_commit,
        git_branch=first.git_branch,
        direction=split.direction,
        before_passed=split.before[0],
        before_samples=split.before[1],
        after_passed=split.after[0],
        after_samples=split.after[1],
        p_value=split.p_value,
        adjusted_p=p_adj,
        split_points=split.split_points,
        cases_searched=cases_searched,
        definition_changed=any(r.definition_changed for r in since_last),
    )


class _Series:
    """Cases' runs in the window asked, grouped by history key, oldest first."""

    def __init__(self) -> None:
        self.label: dict[str, tuple[str, str, str, str, str]] = {}
        self.runs: dict[str, list[_Run]] = defaultdict(list)


def _case_filter(
    suite: str | None, provider: str | None, model: str | None, since: str | None
) -> _Where:
    where = _Where()
    where.add("c.suite = ?", suite)
    where.add("c.provider = ?", provider)
    where.add("c.model = ?", model)
    where.add("c.started_at >= ?", since)
    return where


def _informative_keys(store: Store, where: _Where, *, whole_history: bool = False) -> list[str]:
    """The history keys whose scored runs in the window hold both a passing and a failing
    sample: the only cases that can flip or change (the others' every p-value is 1). Found
    by the database's own aggregation, so the questions read only those cases' runs; over
    every run (`whole_history`: no `since`), in the totals kept at record time."""
    if whole_history:
        rows = store.query(
            f"SELECT c.history_key FROM case_totals c{where.sql()}"
            f"{' AND' if where.clauses else ' WHERE'} c.scored_passed > 0 "
            "AND c.scored_passed < c.scored_samples",
            where.params,
        )
        return sorted(r[0] for r in rows)
    scored = "c.status IN ('pass', 'fail', 'flaky')"
    clause = f"{where.sql()} AND {scored}" if where.clauses else f" WHERE {scored}"
    rows = store.query(
        f"SELECT c.history_key FROM cases c{clause} GROUP BY c.history_key "
        "HAVING SUM(c.passed) > 0 AND SUM(c.passed) < SUM(c.samples)",
        where.params,
    )
    return sorted(r[0] for r in rows)


def _series(store: Store, where: _Where, keys: Sequence[str]) -> _Series:
    """The runs of the cases `keys`, read from the covering index `cases_series`; the runs'
    ids and commits are read apart, once per run."""
    series = _Series()
    grouped: dict[str, list[Sequence[Any]]] = defaultdict(list)
    run_keys: set[str] = set()
    for start in range(0, len(keys), 500):
        chunk = list(keys[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        clause = f"{where.sql()} AND" if where.clauses else " WHERE"
        rows = store.query(
            "SELECT c.history_key, c.suite, c.case_id, c.provider, c.model, c.prompt_variant, "
            "c.run_key, c.started_at, c.status, c.pass_rate, c.passed, c.samples, "
            f"c.latency_ms, c.definition_hash FROM cases c{clause} c.history_key IN ({marks}) "
            "ORDER BY c.history_key, c.started_at, c.run_key",
            [*where.params, *chunk],
        )
        for row in rows:
            series.label[row[0]] = (row[1], row[2], row[3], row[4], row[5])
            grouped[row[0]].append(row[6:])
            run_keys.add(row[6])
    runs = _run_refs(store, sorted(run_keys))
    unknown = ("", None, None)
    for key, group in grouped.items():
        rows = []
        for run_key, started, *outcome in group:
            run_id, commit, branch = runs.get(run_key, unknown)
            rows.append((run_key, run_id, started, commit, branch, *outcome))
        series.runs[key] = _case_runs(rows)
    return series


def _run_refs(store: Store, keys: Sequence[str]) -> dict[str, tuple[str, str | None, str | None]]:
    """run_key -> (run_id, git_commit, git_branch)."""
    found: dict[str, tuple[str, str | None, str | None]] = {}
    for start in range(0, len(keys), 500):
        chunk = list(keys[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        for key, run_id, commit, branch in store.query(
            f"SELECT run_key, run_id, git_commit, git_branch FROM runs WHERE run_key IN ({marks})",
            chunk,
        ):
            found[key] = (run_id, commit, branch)
    return found


def _changes_of(series: _Series, alpha: float) -> dict[str, Change]:
    found = {}
    for key, runs in series.runs.items():
        s, case_id, prov, mod, variant = series.label[key]
        change = _change_of(
            s, case_id, prov, mod, variant, runs, cases_searched=len(series.runs), alpha=alpha
        )
        if change is not None:
            found[key] = change
    return found


def changes(
    store: Store,
    *,
    since: str | None = None,
    suite: str | None = None,
    provider: str | None = None,
    model: str | None = None,
    alpha: float = analysis.DEFAULT_ALPHA,
) -> list[Change]:
    """Cases whose pass rate changed for good within the window, one change each (its best
    split), newest change first."""
    where = _case_filter(suite, provider, model, since)
    keys = _informative_keys(store, where, whole_history=since is None)
    series = _series(store, where, keys)
    found = list(_changes_of(series, alpha).values())
    found.sort(key=lambda c: (c.started_at, c.suite, c.case_id), reverse=True)
    return found


def flaky_cases(
    store: Store,
    *,
    since: str | None = None,
    suite: str | None = None,
    provider: str | None = None,
    model: str | None = None,
    min_flips: int = analysis.MIN_FLIPS,
    limit: int | None = None,
) -> list[FlakyCase]:
    """Cases that flip between runs with an unchanged definition, most flips first."""
    where = _case_filter(suite, provider, model, since)
    series = _series(store, where, _informative_keys(store, where, whole_history=since is None))
    found = []
    for key, runs in series.runs.items():
        points = _points(runs)
        flipped = analysis.flips(points)
        if flipped < min_flips:
            continue
        passed, samples, low, high = analysis.pass_interval(points)
        s, case_id, prov, mod, variant = series.label[key]
        found.append(
            FlakyCase(
                suite=s,
                case_id=case_id,
                provider=prov,
                model=mod,
                prompt_variant=variant,
                runs=len(runs),
                flips=flipped,
                passed=passed,
                samples=samples,
                pass_rate=passed / samples if samples else 0.0,
                ci_low=low,
                ci_high=high,
                last_status=runs[-1].status,
                last_run=runs[-1].run,
            )
        )
    found.sort(key=lambda f: (-f.flips, abs(f.pass_rate - 0.5), f.suite, f.case_id))
    return found[:limit] if limit is not None else found


def trend(
    store: Store,
    suite: str,
    *,
    provider: str | None = None,
    model: str | None = None,
    since: str | None = None,
    last: int | None = None,
) -> list[TrendPoint]:
    """The suite's pass rate (with its Wilson interval), latency, tokens and cost per run,
    oldest first."""
    where = _Where()
    where.add("s.suite = ?", suite)
    where.add("s.provider = ?", provider)
    where.add("s.model = ?", model)
    where.add("s.started_at >= ?", since)
    page = ""
    params = list(where.params)
    if last is not None:
        page = " LIMIT ?"
        params.append(int(last))
    rows = store.query(
        "SELECT s.run_key, r.run_id, s.started_at, r.git_commit, s.provider, s.model, s.total, "
        "s.scored_passed, s.scored, s.pass_rate, s.latency_p50, s.latency_p95, s.tokens_in, "
        f"s.tokens_out, s.cost_usd FROM run_suites s JOIN runs r ON r.run_key = s.run_key"
        f"{where.sql()} ORDER BY s.started_at DESC, s.run_key DESC{page}",
        params,
    )
    points = []
    for row in reversed(rows):
        key, run_id, started, commit, prov, mod, total, passed, scored, rate = row[:10]
        interval = wilson_interval(passed, scored) if scored else None
        points.append(
            TrendPoint(
                run=key,
                run_id=run_id,
                started_at=started,
                git_commit=commit,
                provider=prov,
                model=mod,
                total=total,
                passed=passed,
                scored=scored,
                pass_rate=rate,
                ci_low=interval.low if interval else None,
                ci_high=interval.high if interval else None,
                latency_p50=row[10],
                latency_p95=row[11],
                tokens_in=row[12],
                tokens_out=row[13],
                cost_usd=row[14],
            )
        )
    return points


def latest_cases(
    store: Store,
    *,
    suite: str | None = None,
    provider: str | None = None,
    model: str | None = None,
    with_changes: bool = True,
) -> list[LatestCase]:
    """Every case's latest run (per provider, model, prompt variant and sampling), by suite
    and case id; with its changepoint where it has one (`with_changes`)."""
    where = _case_filter(suite, provider, model, None)
    rows = store.query(
        "SELECT c.history_key, c.suite, c.case_id, c.provider, c.model, c.prompt_variant, "
        "c.status, c.pass_rate, c.run_key, r.run_id, c.started_at, n.runs "
        # CROSS JOIN: SQLite then starts from the totals (a row per case) and looks each
        # one's latest run up, rather than scanning every run of every case.
        "FROM (SELECT c.history_key AS k, c.last_started AS last, c.runs AS runs "
        f"FROM case_totals c{where.sql()}) n CROSS JOIN cases c "
        "JOIN runs r ON r.run_key = c.run_key "
        "WHERE c.history_key = n.k AND c.started_at = n.last ORDER BY c.run_key",
        where.params,
    )
    by_key: dict[str, Change] = {}
    if with_changes:
        series = _series(store, where, _informative_keys(store, where, whole_history=True))
        by_key = _changes_of(series, analysis.DEFAULT_ALPHA)
    latest: dict[str, LatestCase] = {}
    for key, s, case_id, prov, mod, variant, status, rate, run, run_id, started, runs in rows:
        # Two runs started in the same second: the later key wins, as everywhere else.
        latest[key] = LatestCase(
            suite=s,
            case_id=case_id,
            provider=prov,
            model=mod,
            prompt_variant=variant,
            status=status,
            pass_rate=rate,
            run=run,
            run_id=run_id,
            started_at=started,
            runs=runs,
            change=by_key.get(key),
        )
    found = list(latest.values())
    found.sort(key=lambda c: (c.suite, c.case_id, c.provider, c.model, c.prompt_variant))
    return found


def list_verdicts(
    store: Store, *, kind: str | None = None, limit: int | None = 100, offset: int = 0
) -> list[VerdictRecord]:
    """Recorded verdicts (`baseline`, `compare`, `soak`, `crash-test`), newest first."""
    where = _Where()
    where.add("kind = ?", kind)
    params = list(where.params)
    page = ""
    if limit is not None:
        page = " LIMIT ? OFFSET ?"
        params += [int(limit), int(offset)]
    rows = store.query(
        "SELECT verdict_key, kind, recorded_at, subject, outcome, exit_code, run_key, "
        f"git_commit, git_branch, ci_url, body FROM verdicts{where.sql()} "
        f"ORDER BY recorded_at DESC, verdict_key{page}",
        params,
    )
    return [
        VerdictRecord(
            id=r[0],
            kind=r[1],
            recorded_at=r[2],
            subject=r[3],
            outcome=r[4],
            exit_code=r[5],
            run=r[6],
            git_commit=r[7],
            git_branch=r[8],
            ci_url=r[9],
            body=json.loads(r[10]),
        )
        for r in rows
    ]


def suites(store: Store) -> list[str]:
    """The suites the store holds runs of."""
    return [r[0] for r in store.query("SELECT DISTINCT suite FROM run_suites ORDER BY suite")]


CaseRecord.model_rebuild()
