"""`evalctl view`: the server time of each page over a store of 1,000 runs of 100 cases,
measured in one run (issue 39 item 7: each page answers in <= 0.3 s of server time), on
SQLite and, where psycopg and PostgreSQL's binaries are installed, on a PostgreSQL server
started for the run.

Each store is built here through the store's own recording
(`history.record.record_run`): one suite of 100 cases on the scripted provider, each case
with a short transcript and a tool call, one case breaking for good at run 600 and every
tenth case passing about half the time. Each page is requested in-process through
Starlette's TestClient (routing, the read-only store, the queries, the template), first
once to warm it, then `--repeats` times; the median is its server time (wall clock, and the
process's CPU time beside it), and the ratio line gives the slowest page against the 0.3 s
budget.

    python benchmarks/bench_view.py [--runs 1000] [--cases 100] [--repeats 3] [--store FILE]
        [--no-postgres]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BUDGET_S = 0.3


def build(url: str, runs: int, cases: int) -> None:
    from evalctl.chat import CompletionResponse, Message, ToolCall
    from evalctl.history.record import Provenance, record_run
    from evalctl.history.store import open_store
    from evalctl.results.models import ToolCallRecord, TurnRecord
    from tests import factories as f

    rng = random.Random(39)
    broken = max(1, runs * 6 // 10)
    with open_store(url) as store:
        for i in range(1, runs + 1):
            results = []
            for n in range(cases):
                if n == 0:
                    passed = i < broken
                elif n % 10 == 0:
                    passed = rng.random() < 0.5
                else:
                    passed = True
                status = "pass" if passed else "fail"
                c = f.case(f"bench/case-{n:03d}", status, latency_ms=100 + rng.random() * 50,
                           input_tokens=200, output_tokens=40,
                           failed_checks=("answer",) if not passed else ())  # fmt: skip
                call = ToolCall(id="t1", name="lookup", arguments={"q": f"item {n}"})
                transcript = [
                    TurnRecord(turn=1, sent=[Message.user(f"find item {n}")],
                               reply=CompletionResponse(tool_calls=[call])),
                    TurnRecord(turn=2, reply=CompletionResponse(content=f"item {n} is {i}")),
                ]  # fmt: skip
                record = ToolCallRecord(turn=1, name="lookup", arguments={"q": f"item {n}"},
                                        result=f"row {n}", duration_ms=1.0)  # fmt: skip
                results.append(c.model_copy(update={
                    "output": f"item {n} is {i}", "transcript": transcript,
                    "tool_calls": [record]}))  # fmt: skip
            run = f.run(results, run_id=f"bench-{i:05d}")
            day, hour = divmod(i, 24)
            started = f"2026-{1 + day // 28:02d}-{1 + day % 28:02d}T{hour:02d}:00:00+00:00"
            run = run.model_copy(update={"started_at": started})
            record_run(store, run, Provenance(git_commit=f"{i:040x}", git_branch="main"))


def pages_of(url: str, label: str, repeats: int) -> tuple[float, float]:
    """Each page's median server time over the store at `url`: (slowest wall, its CPU)."""
    from starlette.testclient import TestClient

    from evalctl.history import queries
    from evalctl.history.store import open_store
    from evalctl.view.app import ViewConfig, create_app

    with open_store(url) as store:
        keys = [r.id for r in queries.list_runs(store, limit=2)]
    pages = [
        "/",
        "/runs?provider=scripted&since=2026-02-01",
        f"/runs/{keys[0]}",
        "/cases",
        "/cases/bench/case-000",
        "/trends/bench",
        "/flaky",
        f"/compare/{keys[1]}/{keys[0]}",
    ]
    app = create_app(ViewConfig(store_url=url, time_limit_s=60.0))
    worst = worst_cpu = 0.0
    print(f"\n{label}\n{'page':<44} {'server time':>12} {'its CPU time':>13}")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        for page in pages:
            assert client.get(page).status_code == 200, page
            times, cpu = [], []
            for _ in range(repeats):
                start, start_cpu = time.perf_counter(), time.process_time()
                response = client.get(page)
                times.append(time.perf_counter() - start)
                cpu.append(time.process_time() - start_cpu)
                assert response.status_code == 200, page
            median, median_cpu = statistics.median(times), statistics.median(cpu)
            worst, worst_cpu = max(worst, median), max(worst_cpu, median_cpu)
            label = page if len(page) <= 44 else page[:41] + "..."
            print(f"{label:<44} {median * 1000:>9.0f} ms {median_cpu * 1000:>10.0f} ms")
    return worst, worst_cpu


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--store", type=Path, help="reuse (or build once into) this SQLite file")
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    results: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = args.store or Path(tmp) / "history.sqlite"
        if not path.exists():
            start = time.perf_counter()
            build(str(path), args.runs, args.cases)
            took = time.perf_counter() - start
            size = path.stat().st_size >> 20
            print(f"built {args.runs} runs x {args.cases} cases in {took:.1f} s ({size} MiB)")
        results["SQLite"] = pages_of(str(path), "SQLite", args.repeats)
    if not args.no_postgres:
        from tests.history_helpers import postgres_database

        with postgres_database() as url:
            if url is not None:
                start = time.perf_counter()
                build(url, args.runs, args.cases)
                print(f"\nPostgreSQL: built in {time.perf_counter() - start:.0f} s")
                results["PostgreSQL"] = pages_of(url, "PostgreSQL", args.repeats)
    # On a busy machine the wall time counts the other processes' turns on the cores; the
    # CPU time is this process's own work (the server's, the client's small share included;
    # on PostgreSQL the server process's work is not in it).
    print(f"\nload average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for label, (worst, worst_cpu) in results.items():
        print(
            f"ratio slowest page / {BUDGET_S} s budget ({args.runs} runs x {args.cases} "
            f"cases, {label}): {worst / BUDGET_S:.2f} wall, {worst_cpu / BUDGET_S:.2f} CPU"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
