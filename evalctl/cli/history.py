"""`evalctl history`: import results folders into the run store and ask it questions.

Each command prints a table, or with `--json` one JSON document: an object holding the
records (docs/history.md lists each shape). The records are those of
evalctl.history.queries, which `evalctl view` renders too.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel, Field
from rich.markup import escape
from rich.table import Table

from evalctl.cli import options
from evalctl.cli.history_store import NoStoreOpt, StoreOpt, store_url
from evalctl.cli.output import emit, stdout
from evalctl.errors import BadInputError
from evalctl.history import queries
from evalctl.history.queries import CaseHistory, Change, FlakyCase, RunSummary, TrendPoint
from evalctl.history.store import Store, open_store

HELP = "The run store: runs, a case's history, flaky cases, changes and trends."

SUITE = typer.Option("--suite", help="Only runs of this suite.")
PROVIDER = typer.Option("--provider", help="Only runs of this provider.")
MODEL = typer.Option("--model", help="Only runs of this model.")
SINCE = typer.Option(
    "--since",
    help="Only runs started since: an ISO date or time (UTC), or an age like 7d, 12h.",
)
_AGE = re.compile(r"^(\d+(?:\.\d+)?)([dhw])$")


def parse_since(value: str | None, field: str = "--since") -> str | None:
    """An ISO timestamp to compare run starts with, from a date, a time or an age (7d)."""
    if value is None:
        return None
    age = _AGE.match(value.strip())
    if age:
        amount, unit = float(age.group(1)), age.group(2)
        delta = {"h": timedelta(hours=amount), "d": timedelta(days=amount)}.get(
            unit, timedelta(weeks=amount)
        )
        return (datetime.now(UTC) - delta).isoformat(timespec="seconds")
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise BadInputError(
            f"{value!r} is neither an ISO date or time nor an age like 7d, 12h or 2w",
            field=field,
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat(timespec="seconds")


@contextmanager
def _opened(store: str | None, no_store: bool) -> Iterator[Store]:
    settings = options.read_only_settings()
    url = store_url(settings, options.environ(), store, no_store)
    if url is None:
        raise BadInputError(
            "the run store is off (--no-store, EVALCTL_STORE=off or [history] store = "
            '"off"); name one with --store',
            field="--store",
        )
    opened = open_store(url)
    try:
        yield opened
    finally:
        opened.close()


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def _short(commit: str | None) -> str:
    return (commit or "-")[:10]


# --- import -------------------------------------------------------------------------------


class ImportedRun(BaseModel):
    id: str
    run_id: str
    source: str
    cases: int
    new: bool  # False: the store already held it
    shards: int = 0  # >0: this many shards, imported together as one run


class ImportOutput(BaseModel):
    store: str
    imported: list[ImportedRun] = Field(default_factory=list)


def _render_import(out: ImportOutput) -> None:
    for run in out.imported:
        what = "added" if run.new else "already stored"
        merged = f" (merged from {run.shards} shards)" if run.shards else ""
        stdout.print(
            escape(f"{what}: {run.run_id} ({run.cases} cases){merged} <- {run.source}"),
            soft_wrap=True,
        )
    stdout.print(escape(f"{len(out.imported)} run(s) in {out.store}"), soft_wrap=True)


def import_(
    dirs: Annotated[
        list[Path],
        typer.Argument(
            metavar="DIR...",
            help="Results folders (or results.json files), or folders holding them (CI "
            "artifacts): every results.json below is imported.",
        ),
    ],
    commit: Annotated[
        str | None, typer.Option("--commit", help="The git commit the runs ran at.")
    ] = None,
    branch: Annotated[
        str | None, typer.Option("--branch", help="The git branch the runs ran on.")
    ] = None,
    store: StoreOpt = None,
    no_store: NoStoreOpt = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Add existing results folders to the run store (a run stored already is kept).

    The shards of one sharded run given together are stored as one run, as `evalctl merge`
    would make it. Every results schema version evalctl reads is accepted.
    """
    from evalctl.history.imports import import_paths
    from evalctl.history.record import Provenance

    settings = options.read_only_settings()
    where = Provenance(git_commit=commit, git_branch=branch) if commit or branch else Provenance()
    with _opened(store, no_store) as opened:
        done = import_paths(opened, dirs, where, prices=settings.prices)
        output = ImportOutput(
            store=opened.url,
            imported=[
                ImportedRun(
                    id=d.key,
                    run_id=d.run_id,
                    source=d.source,
                    cases=d.cases,
                    new=d.new,
                    shards=d.shards,
                )
                for d in done
            ],
        )
    emit(output, as_json, _render_import)


# --- list ---------------------------------------------------------------------------------


class ListOutput(BaseModel):
    store: str
    total: int
    runs: list[RunSummary]


def _render_list(out: ListOutput) -> None:
    table = Table(title=f"{len(out.runs)} of {out.total} runs in {out.store}")
    for column in ("id", "run", "started", "provider/model", "suites", "commit", "pass"):
        table.add_column(column)
    for r in out.runs:
        table.add_row(
            r.id[:12],
            escape(r.run_id),
            r.started_at,
            escape(f"{r.provider}/{r.model}"),
            escape(", ".join(r.suites)),
            escape(_short(r.git_commit)),
            f"{r.passed}/{r.total} {_rate(r.pass_rate)}",
        )
    stdout.print(table)


def list_(
    suite: Annotated[str | None, SUITE] = None,
    provider: Annotated[str | None, PROVIDER] = None,
    model: Annotated[str | None, MODEL] = None,
    branch: Annotated[str | None, typer.Option("--branch", help="Only this git branch.")] = None,
    since: Annotated[str | None, SINCE] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="At most N runs.")] = 50,
    offset: Annotated[int, typer.Option("--offset", min=0, help="Skip the newest N.")] = 0,
    store: StoreOpt = None,
    no_store: NoStoreOpt = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """List stored runs, newest first."""
    when = parse_since(since)
    with _opened(store, no_store) as opened:
        filters = dict(suite=suite, provider=provider, model=model, branch=branch, since=when)
        output = ListOutput(
            store=opened.url,
            total=queries.count_runs(opened, **filters),
            runs=queries.list_runs(opened, **filters, limit=limit, offset=offset),
        )
    emit(output, as_json, _render_list)


# --- case ---------------------------------------------------------------------------------


class CaseOutput(BaseModel):
    store: str
    history: CaseHistory
    # One character per run, oldest first: `.` pass, `x` fail, `~` flaky, `E` error,
    # `-` skipped.
    strip: str


def _render_case(out: CaseOutput) -> None:
    h = out.history
    stdout.print(
        escape(f"{h.suite}/{h.case_id} on {h.provider}/{h.model}: {len(h.runs)} runs"),
        soft_wrap=True,
    )
    stdout.print(escape(out.strip), soft_wrap=True)
    if h.change is not None:
        c = h.change
        stdout.print(
            escape(
                f"changed ({c.direction}) at run {c.run_id}, commit {_short(c.git_commit)} "
                f"(p = {c.adjusted_p:.2g})"
            ),
            soft_wrap=True,
        )
    table = Table()
    for column in ("run", "started", "commit", "status", "passed", "note"):
        table.add_column(column)
    for r in h.runs:
        notes = []
        if r.changepoint:
            notes.append("changed here")
        if r.definition_changed:
            notes.append("case edited")
        table.add_row(
            escape(r.run_id),
            r.started_at,
            escape(_short(r.git_commit)),
            r.status,
            f"{r.passed}/{r.samples}" if r.samples else _rate(r.pass_rate),
            ", ".join(notes),
        )
    stdout.print(table)
    if h.others:
        stdout.print(escape("also stored: " + "; ".join(h.others)), soft_wrap=True)


def case(
    key: Annotated[str, typer.Argument(metavar="SUITE/ID", help="The case, as suite/id.")],
    last: Annotated[int | None, typer.Option("--last", min=1, help="Only its last N runs.")] = None,
    provider: Annotated[str | None, PROVIDER] = None,
    model: Annotated[str | None, MODEL] = None,
    store: StoreOpt = None,
    no_store: NoStoreOpt = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """A case's status and pass rate run by run (oldest first), with each commit.

    Its runs with one provider and model: those of its latest run unless --provider and
    --model choose.
    """
    suite, sep, case_id = key.partition("/")
    if not sep or not suite or not case_id:
        raise BadInputError(f"{key!r} is not SUITE/ID", field="SUITE/ID")
    with _opened(store, no_store) as opened:
        history = queries.case_history(
            opened, suite, case_id, provider=provider, model=model, last=last
        )
        url = opened.url
    if history is None:
        raise BadInputError(
            f"the store {url} holds no run of {key}"
            + (f" with {provider or '*'}/{model or '*'}" if provider or model else ""),
            field="SUITE/ID",
            hint="`evalctl history list` shows what it holds",
        )
    emit(CaseOutput(store=url, history=history, strip=history.strip), as_json, _render_case)


# --- flaky --------------------------------------------------------------------------------


class FlakyOutput(BaseModel):
    store: str
    cases: list[FlakyCase]


def _render_flaky(out: FlakyOutput) -> None:
    if not out.cases:
        stdout.print("no flaky case")
        return
    table = Table(title="flaky cases: outcome flips between runs with an unchanged case")
    for column in ("case", "provider/model", "runs", "flips", "pass rate", "95% interval"):
        table.add_column(column)
    for c in out.cases:
        table.add_row(
            escape(f"{c.suite}/{c.case_id}"),
            escape(f"{c.provider}/{c.model}"),
            str(c.runs),
            str(c.flips),
            f"{c.passed}/{c.samples} {c.pass_rate:.0%}",
            f"{c.ci_low:.0%}-{c.ci_high:.0%}",
        )
    stdout.print(table)


def flaky(
    suite: Annotated[str | None, SUITE] = None,
    provider: Annotated[str | None, PROVIDER] = None,
    model: Annotated[str | None, MODEL] = None,
    since: Annotated[str | None, SINCE] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, help="At most N.")] = None,
    store: StoreOpt = None,
    no_store: NoStoreOpt = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Cases whose outcome flips while their definition stays, most flips first.

    A case that changed once for good is a change (`history changes`), not a flake.
    """
    when = parse_since(since)
    with _opened(store, no_store) as opened:
        found = queries.flaky_cases(
            opened, since=when, suite=suite, provider=provider, model=model, limit=limit
        )
        output = FlakyOutput(store=opened.url, cases=found)
    emit(output, as_json, _render_flaky)


# --- changes ------------------------------------------------------------------------------


class ChangesOutput(BaseModel):
    store: str
    since: str | None
    alpha: float
    # How the family-wise error is bounded (docs/history.md, "Statistics").
    correction: str = "bonferroni"
    changes: list[Change]


def _render_changes(out: ChangesOutput) -> None:
    if not out.changes:
        stdout.print("no case changed for good")
        return
    table = Table(title="cases whose pass rate changed for good (first run after the change)")
    for column in ("case", "provider/model", "change", "run", "commit", "p"):
        table.add_column(column)
    for c in out.changes:
        table.add_row(
            escape(f"{c.suite}/{c.case_id}"),
            escape(f"{c.provider}/{c.model}"),
            f"{c.direction} {c.before_passed}/{c.before_samples} -> "
            f"{c.after_passed}/{c.after_samples}",
            escape(c.run_id),
            escape(_short(c.git_commit)),
            f"{c.adjusted_p:.2g}",
        )
    stdout.print(table)


def changes(
    since: Annotated[str | None, SINCE] = None,
    suite: Annotated[str | None, SUITE] = None,
    provider: Annotated[str | None, PROVIDER] = None,
    model: Annotated[str | None, MODEL] = None,
    alpha: Annotated[
        float,
        typer.Option("--alpha", min=0.0001, max=0.5, help="Family-wise false-alarm rate."),
    ] = 0.05,
    store: StoreOpt = None,
    no_store: NoStoreOpt = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Cases whose pass rate changed for good, with the first run after the change.

    Each with that run's commit and the exact test's p-value (Bonferroni over the split
    points and cases searched)."""
    when = parse_since(since)
    with _opened(store, no_store) as opened:
        found = queries.changes(
            opened, since=when, suite=suite, provider=provider, model=model, alpha=alpha
        )
        output = ChangesOutput(store=opened.url, since=when, alpha=alpha, changes=found)
    emit(output, as_json, _render_changes)


# --- trend --------------------------------------------------------------------------------


class TrendOutput(BaseModel):
    store: str
    suite: str
    points: list[TrendPoint]


def _render_trend(out: TrendOutput) -> None:
    table = Table(title=f"{out.suite}: {len(out.points)} runs, oldest first")
    for column in ("run", "started", "commit", "pass rate", "p50 ms", "p95 ms", "tokens", "cost"):
        table.add_column(column)
    for p in out.points:
        table.add_row(
            escape(p.run_id),
            p.started_at,
            escape(_short(p.git_commit)),
            f"{_rate(p.pass_rate)} ({p.passed}/{p.scored})",
            "-" if p.latency_p50 is None else f"{p.latency_p50:.0f}",
            "-" if p.latency_p95 is None else f"{p.latency_p95:.0f}",
            f"{p.tokens_in}+{p.tokens_out}",
            "-" if p.cost_usd is None else f"${p.cost_usd:.4f}",
        )
    stdout.print(table)


def trend(
    suite: Annotated[str, typer.Argument(metavar="SUITE", help="The suite.")],
    provider: Annotated[str | None, PROVIDER] = None,
    model: Annotated[str | None, MODEL] = None,
    since: Annotated[str | None, SINCE] = None,
    last: Annotated[int | None, typer.Option("--last", min=1, help="Its last N runs.")] = None,
    store: StoreOpt = None,
    no_store: NoStoreOpt = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """A suite's pass rate, p50/p95 latency, tokens and cost per run, oldest first."""
    when = parse_since(since)
    with _opened(store, no_store) as opened:
        points = queries.trend(opened, suite, provider=provider, model=model, since=when, last=last)
        output = TrendOutput(store=opened.url, suite=suite, points=points)
    emit(output, as_json, _render_trend)


# --- prune --------------------------------------------------------------------------------


class PruneOutput(BaseModel):
    store: str
    deleted: int
    remaining: int


def _render_prune(out: PruneOutput) -> None:
    stdout.print(
        escape(f"deleted {out.deleted} run(s); {out.remaining} remain in {out.store}"),
        soft_wrap=True,
    )


def prune(
    keep: Annotated[
        int | None, typer.Option("--keep", min=0, help="Keep the newest N runs.")
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option("--older-than", help="Delete runs older than an age: 30d, 12h, 2w."),
    ] = None,
    store: StoreOpt = None,
    no_store: NoStoreOpt = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Delete old runs (and transcripts no run refers to any more)."""
    from evalctl.history.record import prune as prune_runs

    if keep is None and older_than is None:
        raise BadInputError("say what to keep: --keep N or --older-than AGE", field="--keep")
    days = None
    if older_than is not None:
        age = _AGE.match(older_than.strip())
        if not age:
            raise BadInputError(
                f"{older_than!r} is not an age like 30d, 12h or 2w", field="--older-than"
            )
        days = float(age.group(1)) * {"h": 1 / 24, "d": 1.0, "w": 7.0}[age.group(2)]
    with _opened(store, no_store) as opened:
        deleted = prune_runs(opened, keep=keep, older_than_days=days)
        output = PruneOutput(
            store=opened.url, deleted=deleted, remaining=queries.count_runs(opened)
        )
    emit(output, as_json, _render_prune)


def register(root: typer.Typer) -> None:
    # A group of its own per call: tests register the commands once per command line.
    app = typer.Typer(help=HELP, no_args_is_help=True)
    app.command("import")(import_)
    app.command("list")(list_)
    app.command("case")(case)
    app.command("flaky")(flaky)
    app.command("changes")(changes)
    app.command("trend")(trend)
    app.command("prune")(prune)
    root.add_typer(app, name="history")
