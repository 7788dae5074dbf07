"""Run every benchmark in this directory, one after another, and print their reports, then
every ratio they measured as one Markdown table (recorded for the README's generated `bench`
table, below).

Each benchmark prints its own figures as ratios measured in one run against a yardstick:
local vs the best in-process configuration, constrained vs free decoding, compare vs
json.load, `--help` vs `python -c pass`, cloud -j16 vs ideal, the demo's model time vs the
floor of its work at in-process rates; bench_prefix adds the prefill tokens the KV cache
saved per suite. Run it on a quiet machine: llama.cpp threads busy-wait, so anything else
running on the cores skews the local figures; the load average is printed.

Each benchmark's ratio lines are recorded, with the machine, the date and the load average,
in benchmarks/results/bench.json (a benchmark not run keeps its earlier record), and the
docs' generated blocks are rendered again from it (benchmarks/docs_tables.py): the README's
"Measured" section shows them. `--only NAME...` runs some of them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from provenance import stamp

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "bench.json"
BENCHMARKS = (
    "bench_cli_startup.py",
    "bench_compare.py",
    "bench_local.py",
    # Constrained vs free decoding, in-process: the grammar resampler and grammar-first.
    "bench_grammar.py",
    "bench_threads.py",
    "bench_concurrency.py",
    # Cases decoded together: P slots against one, and one context of P sequences.
    "bench_parallel.py",
    "bench_prefix.py",
    # The demo's results (results/demo/results.json, from `make run`) against in-process
    # rates; says how to make them when absent.
    "bench_run_profile.py",
    "bench_datafile_suite.py",
    # The confirmation test's arithmetic at the top of the allowed K, m0 and R.
    "bench_confirm_arithmetic.py",
    # `evalctl view`: each page's server time over 1,000 runs of 100 cases (SQLite).
    "bench_view.py",
    # The run store: recording's cost on a 500-case run, import vs json.load, and each
    # `history` command's server time over 1,000 runs of 100 cases (SQLite, PostgreSQL).
    "bench_history.py",
    # A large run at the server's pace: 600 CSV cases against the fake OpenAI-compatible
    # server at 100 ms, -j 64: wall / ideal, CPU per case, peak requests in flight.
    "bench_scale.py",
    # The openai SDK's own CPU per streamed request: J threads (as evalctl) vs asyncio tasks.
    "bench_openai_async.py",
)


def record(measured: dict[str, dict[str, Any]]) -> None:
    """Merge this run's records into benchmarks/results/bench.json, then re-render the docs."""
    import docs_tables

    before = json.loads(OUT.read_text(encoding="utf-8"))["benchmarks"] if OUT.is_file() else {}
    merged = {
        name: measured.get(name) or before[name]
        for name in BENCHMARKS
        if name in measured or name in before
    }
    data = {"benchmark": "benchmarks/run_all.py", "benchmarks": merged}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(HERE.parent)}")
    docs_tables.main([])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=BENCHMARKS, help="run only these")
    parser.add_argument(
        "--no-record", action="store_true", help=f"leave {OUT.name} and the docs as they are"
    )
    args = parser.parse_args()
    failed = []
    ratios: list[tuple[str, str]] = []
    measured: dict[str, dict[str, Any]] = {}
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    for name in args.only or BENCHMARKS:
        print(f"\n=== {name}", flush=True)
        started = stamp()
        proc = subprocess.run(
            [sys.executable, str(HERE / name)], check=False, capture_output=True, text=True
        )
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr[-2000:] if proc.returncode else "")
        if proc.returncode != 0:
            failed.append(name)
        lines = [" ".join(s.split()) for s in proc.stdout.splitlines()]
        found = [line for line in lines if line.startswith(("ratio", "all "))]
        ratios.extend((name, line) for line in found)
        if proc.returncode == 0:
            measured[name] = {"ratios": found, **started}
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")
    print("\n| benchmark | ratio measured in one run |\n| --- | --- |")
    for name, line in ratios:
        print(f"| `{name}` | {line} |")
    if measured and not args.no_record:
        record(measured)
    if failed:
        print(f"\nfailed (not recorded): {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
