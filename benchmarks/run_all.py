"""Run every benchmark in this directory, one after another, and print their reports.

Each benchmark prints its own figures as ratios measured in one run; this only sequences
them so `make bench` gives the whole picture. Run it on a quiet machine: llama.cpp threads
busy-wait, so anything else running on the 2 cores skews the local figures.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCHMARKS = ("bench_cli_startup.py", "bench_local.py", "bench_concurrency.py")


def main() -> int:
    failed = []
    for name in BENCHMARKS:
        print(f"\n=== {name}", flush=True)
        if subprocess.run([sys.executable, str(HERE / name)], check=False).returncode != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
