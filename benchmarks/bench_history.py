"""The run store (issue 39 item 7), each figure a ratio measured in one run:

1. recording: a 500-case scripted run with the store listening (a store that exists, as
   after a machine's first run), against the same run without one (budget: at most 1.05,
   1.10 once the runner itself gets faster);
2. import: `history import` of a 10,000-case run (each case with a transcript and a tool
   call) into a fresh store, against a `json.load` of its results.json (budget: 2x);
3. questions: with 1,000 runs of 100 cases stored, each `history` command's server time
   (its query, from an open store to the records: what the command does after the CLI's
   start) against the 0.3 s budget, on SQLite, and on PostgreSQL when its binaries and
   psycopg are here (a server is started in a temporary directory, as the tests do).

    python benchmarks/bench_history.py [--runs 1000] [--cases 100] [--import-cases 10000]
        [--run-cases 500] [--repeats 3] [--no-postgres]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BUDGET_S = 0.3


def _median(fn: Callable[[], Any], repeats: int) -> float:
    fn()  # warm
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


# --- 1. recording overhead ----------------------------------------------------------------


def _suite(cases: int) -> str:
    lines = ['[suite]\nname = "bench"\nkind = "assert"\n']
    for n in range(cases):
        lines.append(
            f'[[case]]\nid = "c{n:04d}"\ninput = {{ prompt = "question {n}?" }}\n'
            'assert = [{ type = "contains", value = "ok" }]\n'
        )
    return "\n".join(lines)


def recording(run_cases: int, repeats: int) -> tuple[float, float]:
    from evalctl.config import load_settings
    from evalctl.history.listener import StoreListener
    from evalctl.history.record import Provenance
    from evalctl.runner.api import RunRequest
    from evalctl.runner.execute import execute_run

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "bench.toml").write_text(_suite(run_cases))
        (root / "script.toml").write_text('[[default]]\ncontent = "ok"\n')
        settings = load_settings(cwd=root, env={})
        count = 0
        spent: list[float] = []

        class Timed(StoreListener):
            """The store's listener, timing its own work (the recording's whole cost)."""

            def run_finished(self, result: Any, results_path: Path) -> None:
                start = time.perf_counter()
                super().run_finished(result, results_path)
                spent.append(time.perf_counter() - start)

        def one(store: bool) -> float:
            nonlocal count
            count += 1
            warnings: list[str] = []
            # One store throughout, as a machine has: created (and its schema) once, below.
            listeners = (
                (Timed(str(root / "store.db"), Provenance(), warnings.append),) if store else ()
            )
            request = RunRequest(
                provider="scripted",
                script=root / "script.toml",
                paths=[root / "bench.toml"],
                out_dir=root / f"out{count}",
                show_progress=False,
                listeners=listeners,
            )
            start = time.perf_counter()
            outcome = execute_run(request, settings, {})
            took = time.perf_counter() - start
            assert len(outcome.result.cases) == run_cases and not warnings, warnings
            return took

        one(False)  # warm: imports, plugins
        one(True)  # and the store's file and schema
        without, with_store = [], []
        for _ in range(repeats):  # interleaved, so drift in the machine's load hits both
            without.append(one(False))
            with_store.append(one(True))
        a, b = statistics.median(without), statistics.median(with_store)
        own = statistics.median(spent[1:])
        print(f"{run_cases}-case scripted run: {a * 1000:.0f} ms without a store, "
              f"{b * 1000:.0f} ms recorded; the recording itself {own * 1000:.0f} ms")  # fmt: skip
        # Two figures: the recording's own time over the run's (steady under load), and the
        # two runs' wall times (which on a busy machine carry the other processes' noise).
        return (a + own) / a, b / a


# --- 2. import vs json.load ---------------------------------------------------------------


def _run(run_id: str, cases: int, *, started: str, seed: int, broken_at: int = -1,
         index: int = 0) -> Any:  # fmt: skip
    from evalctl.chat import CompletionResponse, Message, ToolCall
    from evalctl.results.models import ToolCallRecord, TurnRecord
    from tests import factories as f

    rng = random.Random(seed)
    results = []
    for n in range(cases):
        if n == 0:
            passed = index < broken_at or broken_at < 0
        elif n % 10 == 0:
            passed = rng.random() < 0.5
        else:
            passed = True
        c = f.case(f"bench/case-{n:05d}", "pass" if passed else "fail",
                   latency_ms=100 + rng.random() * 50, input_tokens=200, output_tokens=40,
                   failed_checks=() if passed else ("answer",))  # fmt: skip
        call = ToolCall(id="t1", name="lookup", arguments={"q": f"item {n}"})
        c.transcript = [
            TurnRecord(turn=1, sent=[Message.user(f"find item {n}")],
                       reply=CompletionResponse(tool_calls=[call])),
            TurnRecord(turn=2, reply=CompletionResponse(content=f"item {n} is {index % 7}")),
        ]  # fmt: skip
        c.tool_calls = [ToolCallRecord(turn=1, name="lookup", arguments={"q": f"item {n}"},
                                       result=f"row {n}", duration_ms=1.0)]  # fmt: skip
        c.output = f"item {n} is {index % 7}"
        results.append(c)
    run = f.run(results, run_id=run_id)
    return run.model_copy(update={"started_at": started})


def importing(cases: int, repeats: int) -> float:
    from evalctl.history.imports import import_paths
    from evalctl.history.record import Provenance
    from evalctl.history.store import open_store
    from evalctl.results.io import write_run

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = write_run(_run("big", cases, started="2026-01-01T00:00:00+00:00", seed=1), root)
        size = path.stat().st_size >> 20
        count = 0

        def load() -> None:
            with path.open() as fh:
                json.load(fh)

        def imported() -> None:
            nonlocal count
            count += 1
            with open_store(str(root / f"i{count}.db")) as store:
                import_paths(store, [root], Provenance())

        a, b = _median(load, repeats), _median(imported, repeats)
        print(f"{cases}-case results.json ({size} MiB): json.load {a * 1000:.0f} ms, "
              f"import into a fresh store {b * 1000:.0f} ms")  # fmt: skip
        return b / a


# --- 3. the questions, on 1,000 runs of 100 cases -----------------------------------------


def build(url: str, runs: int, cases: int) -> None:
    from evalctl.history.record import Provenance, record_run
    from evalctl.history.store import open_store

    broken = max(1, runs * 6 // 10)
    with open_store(url) as store:
        for i in range(runs):
            day, hour = divmod(i, 24)
            started = f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T{hour:02d}:00:00+00:00"
            run = _run(f"bench-{i:05d}", cases, started=started, seed=i, broken_at=broken,
                       index=i)  # fmt: skip
            record_run(store, run, Provenance(git_commit=f"{i:040x}", git_branch="main"))


def questions(url: str, label: str, runs: int, cases: int, repeats: int) -> float:
    from evalctl.history import queries
    from evalctl.history.store import open_store

    start = time.perf_counter()
    build(url, runs, cases)
    print(f"\n{label}: built {runs} runs x {cases} cases in {time.perf_counter() - start:.0f} s")
    if url.startswith("postgresql://"):
        # What autovacuum does to a table that grew (PostgreSQL 13+ vacuums after inserts):
        # statistics for the planner, and the visibility map index-only scans need. A store
        # that has lived a while is in this state; one loaded a second ago is not yet.
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
    with open_store(url) as store:
        newest = queries.list_runs(store, limit=1)[0].id
        asks: dict[str, Callable[[], Any]] = {
            "history list": lambda: queries.list_runs(store, limit=50),
            "history list --since --suite": lambda: queries.list_runs(
                store, suite="bench", since="2026-02-01", limit=50
            ),
            "history case bench/case-00000": lambda: queries.case_history(
                store, "bench", "case-00000"
            ),
            "history flaky": lambda: queries.flaky_cases(store),
            "history changes": lambda: queries.changes(store),
            "history trend bench": lambda: queries.trend(store, "bench"),
            "a run with its cases (view)": lambda: queries.get_run(store, newest),
            "every case's latest (view)": lambda: queries.latest_cases(store),
        }
        found = queries.changes(store)
        assert [c.case_id for c in found][:1] == ["case-00000"], found
        worst = 0.0
        print(f"{'command':<36} {'server time':>12}")
        for name, ask in asks.items():
            took = _median(ask, repeats)
            worst = max(worst, took)
            print(f"{name:<36} {took * 1000:>9.0f} ms")
    return worst / BUDGET_S


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--import-cases", type=int, default=10_000)
    parser.add_argument("--run-cases", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")

    record_ratio, record_wall = recording(args.run_cases, args.repeats)
    import_ratio = importing(args.import_cases, args.repeats)
    with tempfile.TemporaryDirectory() as tmp:
        sqlite_ratio = questions(str(Path(tmp) / "h.sqlite"), "SQLite", args.runs, args.cases,
                                 args.repeats)  # fmt: skip
    pg_ratio = None
    if not args.no_postgres:
        from tests.history_helpers import postgres_database

        with postgres_database() as url:
            if url is not None:
                pg_ratio = questions(url, "PostgreSQL", args.runs, args.cases, args.repeats)
    print(f"\nload average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    print(
        f"ratio recorded / unrecorded {args.run_cases}-case scripted run: {record_ratio:.3f} "
        f"(the recording's own time; wall times of the two runs: {record_wall:.3f})"
    )
    print(f"ratio import / json.load of a {args.import_cases}-case run: {import_ratio:.2f}")
    print(f"ratio slowest history command / {BUDGET_S} s ({args.runs} runs x {args.cases} "
          f"cases), SQLite: {sqlite_ratio:.2f}")  # fmt: skip
    if pg_ratio is not None:
        print(f"ratio slowest history command / {BUDGET_S} s ({args.runs} runs x "
              f"{args.cases} cases), PostgreSQL: {pg_ratio:.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
