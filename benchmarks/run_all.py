"""Run every benchmark in this directory, one after another, and print their reports, then
every ratio they measured as one Markdown table (the README's "Measured" table is pasted from
it).

Each benchmark prints its own figures as ratios measured in one run against a yardstick:
local vs the best in-process configuration, constrained vs free decoding, compare vs
json.load, `--help` vs `python -c pass`, cloud -j16 vs ideal, the demo's model time vs the
floor of its work at in-process rates; bench_prefix adds the prefill tokens the KV cache
saved per suite. Run it on a quiet machine: llama.cpp threads busy-wait, so anything else
running on the cores skews the local figures; the load average is printed.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
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
)


def main() -> int:
    failed = []
    ratios: list[tuple[str, str]] = []
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    for name in BENCHMARKS:
        print(f"\n=== {name}", flush=True)
        proc = subprocess.run(
            [sys.executable, str(HERE / name)], check=False, capture_output=True, text=True
        )
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr[-2000:] if proc.returncode else "")
        if proc.returncode != 0:
            failed.append(name)
        for line in proc.stdout.splitlines():
            if line.startswith(("ratio", "all ")):
                ratios.append((name, " ".join(line.split())))
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")
    print("\n| benchmark | ratio measured in one run |\n| --- | --- |")
    for name, line in ratios:
        print(f"| `{name}` | {line} |")
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
