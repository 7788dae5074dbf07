"""Writing runs and verdicts into a store.

A run is keyed by a content hash of its results (its run id, start and end, provider,
model, shard and every case's key, status and pass rate), so recording it twice, from the
runner as it finishes and later from its folder with `history import`, stores it once:
every insert is `ON CONFLICT DO NOTHING`, inside one transaction per run.

What is kept of a case: its status, pass rate over its samples, checks, latency, tokens and
cost, and its transcript (with the system prompt and tool calls), redacted as on disk,
zlib-compressed and stored once per distinct content (by its hash): a case that answers
the same way in many runs costs one blob. A case's *history key* is its suite, case id,
provider, model, prompt variant and sampling (temperature and top_p; not the seed, which a
sampling run draws fresh); its *definition hash* covers what the suite file says of it (the
input, the values filled into it, labels, the checks and what they expect, the system
prompt, max_tokens, the suite's version), so an edit of the case is marked in its history.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NamedTuple

from pydantic_core import to_json

from evalctl.cost import usage_pricer
from evalctl.history.store import TOTALS_SELECT, TOTALS_VERSION, Store
from evalctl.results.models import SCORED, CaseResult, RunResult
from evalctl.results.summary import percentile
from evalctl.runner import merge
from evalctl.secrets import redact

# zlib level 1: transcripts are JSON text that compresses ~5x even at the fastest level;
# higher levels buy a few percent for several times the time (benchmarks/bench_history.py).
_ZLIB_LEVEL = 1


@dataclass(frozen=True)
class Provenance:
    """Where a run ran: the project's git state and the CI run, where known."""

    git_commit: str | None = None
    git_branch: str | None = None
    git_dirty: bool | None = None
    ci_run_id: str | None = None
    ci_url: str | None = None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def ci_run(env: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(run id, URL) of the CI run from the usual variables: GitHub Actions, GitLab CI,
    Buildkite, CircleCI, Jenkins; (None, None) outside CI."""
    if env.get("GITHUB_RUN_ID"):
        run_id = env["GITHUB_RUN_ID"]
        server = env.get("GITHUB_SERVER_URL", "https://github.com")
        repo = env.get("GITHUB_REPOSITORY")
        url = f"{server}/{repo}/actions/runs/{run_id}" if repo else None
        return run_id, url
    if env.get("CI_PIPELINE_ID"):
        return env["CI_PIPELINE_ID"], env.get("CI_PIPELINE_URL")
    if env.get("BUILDKITE_BUILD_ID") or env.get("BUILDKITE_BUILD_URL"):
        return env.get("BUILDKITE_BUILD_ID"), env.get("BUILDKITE_BUILD_URL")
    if env.get("CIRCLE_BUILD_NUM"):
        return env["CIRCLE_BUILD_NUM"], env.get("CIRCLE_BUILD_URL")
    if env.get("BUILD_URL"):  # Jenkins
        return env.get("BUILD_ID"), env["BUILD_URL"]
    return None, None


def _git(project: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(project), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def provenance(env: Mapping[str, str], project: Path) -> Provenance:
    """The project's git commit, branch and dirty flag (EVALCTL_GIT_COMMIT and
    EVALCTL_GIT_BRANCH override them, for runs outside the checkout), and the CI run."""
    commit = env.get("EVALCTL_GIT_COMMIT") or _git(project, "rev-parse", "HEAD")
    branch = env.get("EVALCTL_GIT_BRANCH")
    dirty: bool | None = None
    if commit is not None and not env.get("EVALCTL_GIT_COMMIT"):
        status = _git(project, "status", "--porcelain", "--untracked-files=no")
        dirty = None if status is None else bool(status)
    if branch is None and commit is not None:
        # CI checks out a detached HEAD; its variables name the branch.
        branch = (
            env.get("GITHUB_HEAD_REF")
            or env.get("GITHUB_REF_NAME")
            or env.get("CI_COMMIT_REF_NAME")
            or env.get("BUILDKITE_BRANCH")
            or _git(project, "rev-parse", "--abbrev-ref", "HEAD")
        )
        if branch == "HEAD":
            branch = None
    ci_id, ci_url = ci_run(env)
    return Provenance(commit, branch, dirty, ci_id, ci_url)


# json.dumps's encoders for these settings, made once (a run asks for tens of thousands of
# dumps; making the encoder each time was a fifth of their cost). The same text as json.dumps.
_SORTED = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str).encode
_COMPACT = json.JSONEncoder(separators=(",", ":"), default=str).encode


def _hash(value: Any) -> str:
    text = _SORTED(value)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _key(*parts: str) -> str:
    """A case's history key: its parts, joined by a separator none of them holds."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:24]


def run_key(result: RunResult) -> str:
    """The store's key for a run: a hash of its id and content. A merged run's id is left
    out: shards merged by `evalctl merge` and the same shards imported together are one run,
    and a merge names its run afresh each time. Every other run keeps its id in the key: two
    runs of a fast provider can start in the same second with the same outcomes."""
    shard = result.settings.shard
    return _hash(
        [
            None if merge.is_merged(result.run_id) else result.run_id,
            result.started_at,
            result.finished_at,
            result.provider.name,
            result.provider.model,
            [shard.index, shard.count] if shard else None,
            result.settings.prompt_template,
            [[c.key, c.status, c.pass_rate, len(c.attempts), c.latency_ms] for c in result.cases],
        ]
    )[:24]


def _sampling_key(result: RunResult, case: CaseResult) -> str:
    sampling = case.sampling or result.settings.sampling.get(case.suite)
    if sampling is None:
        return ""
    parts = []
    if sampling.temperature is not None:
        parts.append(f"temperature={sampling.temperature:g}")
    if sampling.top_p is not None:
        parts.append(f"top_p={sampling.top_p:g}")
    return ",".join(parts)


def _definition_hash(result: RunResult, case: CaseResult) -> str:
    """What the suite file says of the case, as its result shows it; "" for a case that was
    not scored (an error or a skip records no checks to go by)."""
    if case.status not in SCORED:
        return ""
    prompt = result.system_prompts.get(case.system_prompt or "", case.system_prompt)
    return _hash(
        {
            "input": case.input,
            "vars": case.vars,
            "features": case.features,
            "metadata": case.metadata,
            "checks": sorted([c.name, repr(c.expected), c.weight] for c in case.checks),
            "system_prompt": prompt,
            "max_tokens": result.settings.max_tokens.get(case.suite),
            "suite_version": result.settings.suite_versions.get(case.suite),
        }
    )[:16]


def _variant(result: RunResult) -> str:
    template = result.settings.prompt_template
    return "" if template is None else "tmpl:" + _hash(template)[:12]


@dataclass(frozen=True)
class Recorded:
    key: str
    run_id: str
    cases: int
    new: bool  # False: the store already held it


class Talk(NamedTuple):  # a tuple: made once per case of an imported run
    """A case's conversation: TurnRecord and ToolCallRecord models (a run in memory), or
    their dicts as results.json holds them (a file read by `history import`); serialised
    alike, they are what its transcript blob is made of."""

    transcript: list[Any]
    tool_calls: list[Any]
    output: str


def talks_of(result: RunResult) -> list[Talk]:
    """The conversations of a run held in memory (the runner's), as models: serialised as
    they are, straight to the JSON a file holds (no dicts made on the way)."""
    return [
        Talk(list(case.transcript), list(case.tool_calls), case.output) for case in result.cases
    ]


# Joins a run's texts for one redaction pass: json.dumps escapes every control character, so
# it appears only where put (an error or output holding one falls back to one pass each).
_SEP = "\x00"


def _redact_all(texts: list[str]) -> list[str]:
    """`redact` over many texts at the cost of one pass (each pass scans the environment)."""
    if any(_SEP in t for t in texts):
        return [redact(t) for t in texts]
    out = redact(_SEP.join(texts)).split(_SEP)
    return out if len(out) == len(texts) else [redact(t) for t in texts]


def record_run(
    store: Store,
    result: RunResult,
    where: Provenance,
    *,
    source: Path | None = None,
    talks: list[Talk] | None = None,
) -> Recorded:
    """Store `result` (once: a run already stored is left as it is). `talks`: its cases'
    conversations where `result` was read without them (`history import` reads a file's
    conversations apart, which validating would cost most of the time); default: its own.
    Everything stored is redacted as results files are."""
    key = run_key(result)
    if store.query("SELECT 1 FROM runs WHERE run_key = ?", [key]):
        return Recorded(key, result.run_id, len(result.cases), new=False)
    talks = talks_of(result) if talks is None else talks
    price = usage_pricer(result.provider.name, result.provider.model)
    variant = _variant(result)
    by_suite: dict[str, list[CaseResult]] = {}
    texts: list[str] = []
    for case, talk in zip(result.cases, talks, strict=True):
        by_suite.setdefault(case.suite, []).append(case)
        body = ""
        if talk.transcript or talk.tool_calls:
            # pydantic-core's serialiser: a third of json.dumps's time on the bulk of a run
            # (its conversations), the same JSON values (non-ASCII kept as UTF-8).
            body = to_json(
                {
                    "system_prompt": result.system_prompts.get(case.system_prompt or ""),
                    "transcript": talk.transcript,
                    "tool_calls": talk.tool_calls,
                },
                by_alias=False,  # as model_dump writes results.json
            ).decode("utf-8")
        checks = _COMPACT(
            [
                {
                    "name": c.name,
                    "status": c.status,
                    "expected": c.expected,
                    "actual": c.actual,
                    "message": c.message,
                }
                for c in case.checks
            ]
        )
        texts += [body, checks, talk.output, case.error or ""]
    texts = _redact_all(texts)
    blobs: dict[str, bytes] = {}
    hashes: list[str | None] = []
    for body in texts[0::4]:
        transcript_hash = None
        if body:
            data = body.encode("utf-8")
            transcript_hash = hashlib.sha256(data).hexdigest()[:32]
            blobs.setdefault(transcript_hash, data)
        hashes.append(transcript_hash)
    _drop_present(store, blobs)
    definitions: dict[str, str] = {}
    case_rows: list[tuple[Any, ...]] = []
    for n, case in enumerate(result.cases):
        case_rows.append(_case_row(result, case, key, variant, texts[4 * n : 4 * n + 4],
                                   hashes[n], definitions))  # fmt: skip
    # Compressed only once known to be new: a run whose answers repeat an earlier run's (a
    # scripted or deterministic provider) costs a hash per case, not a compression.
    blob_rows = [(h, zlib.compress(data, _ZLIB_LEVEL)) for h, data in blobs.items()]
    suite_rows = [
        _suite_row(key, result, suite, cases, price, definitions)
        for suite, cases in by_suite.items()
    ]
    run_row = _run_row(key, result, where, source, variant, suite_rows)
    with store.writing() as cur:
        # A run interrupted and then resumed (`run --resume`) is one run: the complete
        # record replaces the partial one.
        if not result.interrupted:
            store.run(
                cur,
                "SELECT run_key FROM runs WHERE run_id = ? AND started_at = ? "
                "AND interrupted = 1 AND run_key <> ?",
                (result.run_id, result.started_at, key),
            )
            _delete_runs(store, cur, [row[0] for row in cur.fetchall()])
        # A blob another writer stored since they were looked up is skipped here.
        store.many(
            cur,
            "INSERT INTO blobs (hash, data) VALUES (?, ?) ON CONFLICT (hash) DO NOTHING",
            blob_rows,
        )
        store.run(cur, _insert("runs", len(run_row), "run_key"), run_row)
        if cur.rowcount == 0:
            # Another writer stored this run since it was looked up: its cases and totals
            # are in, and adding them to the totals again would count them twice.
            return Recorded(key, result.run_id, len(result.cases), new=False)
        if suite_rows:
            store.many(cur, _insert("run_suites", len(suite_rows[0]), "run_key, suite"), suite_rows)
        if case_rows:
            store.many(cur, _insert("cases", len(case_rows[0]), "run_key, case_key"), case_rows)
            if store.version >= TOTALS_VERSION:  # else the upgrade counts them from `cases`
                store.many(cur, _ADD_TOTALS, _totals(case_rows))
    return Recorded(key, result.run_id, len(result.cases), new=True)


# A run's cases added to their histories' totals (`case_totals`, evalctl.history.store).
_ADD_TOTALS = (
    "INSERT INTO case_totals VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (history_key) "
    "DO UPDATE SET runs = case_totals.runs + excluded.runs, "
    "scored_passed = case_totals.scored_passed + excluded.scored_passed, "
    "scored_samples = case_totals.scored_samples + excluded.scored_samples, "
    "last_started = CASE WHEN excluded.last_started > case_totals.last_started "
    "THEN excluded.last_started ELSE case_totals.last_started END"
)


def _totals(case_rows: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """The `case_totals` rows of a run's case rows (one per history key)."""
    found: dict[str, list[Any]] = {}
    for row in case_rows:
        (_, _, suite, case_id, started, provider, model, variant, _, history, _, status, _,
         passed, samples) = row[:15]  # fmt: skip
        scored = status in SCORED
        entry = found.get(history)
        if entry is None:
            found[history] = [history, suite, case_id, provider, model, variant, 1,
                              passed if scored else 0, samples if scored else 0,
                              started]  # fmt: skip
        else:
            entry[6] += 1
            entry[7] += passed if scored else 0
            entry[8] += samples if scored else 0
            entry[9] = max(entry[9], started)
    return [tuple(entry) for entry in found.values()]


def _case_row(
    result: RunResult,
    case: CaseResult,
    key: str,
    variant: str,
    texts: Sequence[str],
    transcript_hash: str | None,
    definitions: dict[str, str],
) -> tuple[Any, ...]:
    """A case's row in `cases`; `texts`: its transcript, checks, output and error, redacted."""
    _, checks, output, error = texts
    passed, samples = case.pass_counts()
    definitions[case.key] = definition = _definition_hash(result, case)
    sampling = _sampling_key(result, case)
    history = _key(case.suite, case.id, result.provider.name, result.provider.model, variant,
                   sampling)  # fmt: skip
    return (
        key,
        case.key,
        case.suite,
        case.id,
        result.started_at,
        result.provider.name,
        result.provider.model,
        variant,
        sampling,
        history,
        definition,
        case.status,
        case.pass_rate,
        passed,
        samples,
        case.latency_ms,
        case.usage.input_tokens,
        case.usage.output_tokens,
        checks,
        error or None,
        output,
        transcript_hash,
    )


def _run_row(
    key: str,
    result: RunResult,
    where: Provenance,
    source: Path | None,
    variant: str,
    suite_rows: list[tuple[Any, ...]],
) -> tuple[Any, ...]:
    s = result.summary
    shard = result.settings.shard
    return (
        key,
        result.run_id,
        result.kind,
        result.started_at,
        result.finished_at,
        _now(),
        result.provider.name,
        result.provider.model,
        result.provider.model_sha256,
        variant,
        json.dumps({k: v.model_dump(mode="json") for k, v in result.settings.sampling.items()}),
        json.dumps(sorted(r[1] for r in suite_rows) or result.settings.suites),
        json.dumps({r[1]: r[5] for r in suite_rows}),
        result.platform.model_dump_json() if result.platform else None,
        redact(result.environment.model_dump_json()),
        result.evalctl_version,
        where.git_commit,
        where.git_branch,
        None if where.git_dirty is None else int(where.git_dirty),
        where.ci_run_id,
        where.ci_url,
        str(source) if source is not None else None,
        f"{shard.index}/{shard.count}" if shard else None,
        int(result.interrupted),
        s.total,
        s.passed,
        s.failed,
        s.errors,
        s.skipped,
        s.pass_rate,
        s.latency_ms.p50 if s.total else None,
        s.latency_ms.p95 if s.total else None,
        s.usage.input_tokens,
        s.usage.output_tokens,
        s.estimated_cost_usd,
        redact(result.settings.model_dump_json(exclude={"shard"})),
    )


def _insert(table: str, columns: int, key: str) -> str:
    marks = ", ".join("?" for _ in range(columns))
    return f"INSERT INTO {table} VALUES ({marks}) ON CONFLICT ({key}) DO NOTHING"


def _drop_present(store: Store, blobs: dict[str, bytes]) -> None:
    """Drop from `blobs` those the store already holds (saves compressing and sending them
    again); read before the write transaction, so as not to hold its lock meanwhile."""
    hashes = list(blobs)
    for start in range(0, len(hashes), 500):
        chunk = hashes[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        for (found,) in store.query(f"SELECT hash FROM blobs WHERE hash IN ({marks})", chunk):
            blobs.pop(found, None)


def _suite_row(
    key: str,
    result: RunResult,
    suite: str,
    cases: Sequence[CaseResult],
    price: Any,
    definitions: Mapping[str, str],
) -> tuple[Any, ...]:
    statuses = [c.status for c in cases]
    scored = [c for c in cases if c.status in SCORED]
    passed = sum(1 for c in scored if c.status == "pass")
    latencies = [c.latency_ms for c in scored]
    tokens_in = sum(c.usage.input_tokens for c in cases)
    tokens_out = sum(c.usage.output_tokens for c in cases)
    costs = [price(c.usage) for c in cases]
    cost = None if any(c is None for c in costs) or not costs else round(sum(costs), 6)
    suite_hash = _hash(sorted(definitions[c.key] for c in cases))[:16]
    return (
        key,
        suite,
        result.started_at,
        result.provider.name,
        result.provider.model,
        suite_hash,
        len(cases),
        statuses.count("pass"),
        statuses.count("fail"),
        statuses.count("error"),
        passed,
        len(scored),
        passed / len(scored) if scored else None,
        percentile(latencies, 50) if latencies else None,
        percentile(latencies, 95) if latencies else None,
        tokens_in,
        tokens_out,
        cost,
    )


def record_verdict(
    store: Store,
    kind: str,
    subject: str,
    outcome: str,
    exit_code: int,
    body: Mapping[str, Any],
    where: Provenance,
    *,
    run: str | None = None,
) -> str:
    """Store a `baseline`, `compare`, `soak` or `crash-test` verdict; returns its key."""
    text = redact(json.dumps(body, sort_keys=True, default=str))
    recorded = _now()
    key = _hash([kind, subject, outcome, exit_code, text, recorded])[:24]
    with store.writing() as cur:
        store.run(
            cur,
            "INSERT INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (verdict_key) DO NOTHING",
            (
                key,
                kind,
                recorded,
                redact(subject),
                outcome,
                exit_code,
                run,
                where.git_commit,
                where.git_branch,
                where.ci_url,
                text,
            ),
        )
    return key


def prune(store: Store, *, keep: int | None = None, older_than_days: float | None = None) -> int:
    """Delete runs beyond the newest `keep`, and/or those started over `older_than_days`
    ago, with their cases; then blobs no case refers to. Returns the runs deleted."""
    doomed: set[str] = set()
    if keep is not None:
        rows = store.query("SELECT run_key FROM runs ORDER BY started_at DESC, run_key DESC")
        doomed.update(r[0] for r in rows[keep:])
    if older_than_days is not None:
        cutoff = (datetime.now(UTC) - timedelta(days=older_than_days)).isoformat(timespec="seconds")
        doomed.update(
            r[0] for r in store.query("SELECT run_key FROM runs WHERE started_at < ?", [cutoff])
        )
    keys = sorted(doomed)
    with store.writing() as cur:
        _delete_runs(store, cur, keys)
        if keys:
            store.run(
                cur,
                "DELETE FROM blobs WHERE hash NOT IN "
                "(SELECT transcript_hash FROM cases WHERE transcript_hash IS NOT NULL)",
            )
    return len(keys)


def _delete_runs(store: Store, cur: Any, keys: Sequence[str]) -> None:
    """Delete these runs with their cases (their transcripts stay until `prune` sweeps), and
    count their cases' histories' totals afresh from the runs that remain."""
    histories: set[str] = set()
    for start in range(0, len(keys), 500):
        chunk = list(keys[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        store.run(cur, f"SELECT DISTINCT history_key FROM cases WHERE run_key IN ({marks})", chunk)
        histories.update(row[0] for row in cur.fetchall())
        for table in ("cases", "run_suites", "runs"):
            store.run(cur, f"DELETE FROM {table} WHERE run_key IN ({marks})", chunk)
    ordered = sorted(histories) if store.version >= TOTALS_VERSION else []
    for start in range(0, len(ordered), 500):
        chunk = ordered[start : start + 500]
        marks = ", ".join("?" for _ in chunk)
        store.run(cur, f"DELETE FROM case_totals WHERE history_key IN ({marks})", chunk)
        store.run(
            cur,
            f"INSERT INTO case_totals {TOTALS_SELECT} WHERE history_key IN ({marks}) "
            "GROUP BY history_key",
            chunk,
        )


def project_dir(config_file: Path | None) -> Path:
    """The project whose git state a run records: evalctl.toml's directory, else here."""
    return config_file.parent if config_file is not None else Path(os.getcwd())
