"""The test suite's own speed: `make test`'s pytest step, in parallel (as `make test` runs it)
and in one process, in one run, with the 20 slowest tests of the parallel run.

    python benchmarks/bench_tests.py            # both, then the ratio
    python benchmarks/bench_tests.py --parallel # only the parallel run (about half the time)

The ratio (parallel ÷ one process) holds for the machine and the moment it was measured on:
both runs share them. Not part of `make bench` (it takes as long as two test runs); run it on a
quiet machine, as the load average it prints shows.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"=+ (.*(passed|failed).*) in [0-9.]+s")


def run_pytest(*args: str) -> tuple[float, str]:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - started
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:])
    return wall, proc.stdout


def summary(output: str) -> str:
    found = SUMMARY.findall(output)
    return found[-1][0] if found else "(no summary line)"


def slowest(output: str) -> list[str]:
    lines = output.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if "slowest 20 durations" in line)
    except StopIteration:
        return []
    return [line for line in lines[start + 1 : start + 21] if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parallel", action="store_true", help="only the parallel run")
    parser.add_argument("--workers", default="auto", help="pytest-xdist workers (default auto)")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    wall_n, out_n = run_pytest("-n", args.workers, "--dist", "worksteal", "--durations=20")
    print(f"parallel (-n {args.workers}): {wall_n:.1f} s wall, {summary(out_n)}")
    print("20 slowest tests of the parallel run:")
    for line in slowest(out_n):
        print(f"  {line}")
    if not args.parallel:
        wall_1, out_1 = run_pytest()
        print(f"one process: {wall_1:.1f} s wall, {summary(out_1)}")
        print(f"ratio parallel / one process: {wall_n / wall_1:.2f}")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
