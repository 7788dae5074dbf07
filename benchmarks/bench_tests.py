"""The test suite's own speed: `make test`'s pytest step, in parallel (as `make test` runs it)
and in one process, in one run, with the 20 slowest tests of the parallel run.

    python benchmarks/bench_tests.py            # both, then the ratio
    python benchmarks/bench_tests.py --parallel # only the parallel run (about half the time)
    python benchmarks/bench_tests.py --fast     # `make test-fast`'s selection, in parallel
    python benchmarks/bench_tests.py --count-only --write  # count the tests, run none

The ratio (parallel ÷ one process) holds for the machine and the moment it was measured on:
both runs share them. Not part of `make bench` (it takes as long as two test runs); run it on a
quiet machine, as the load average it prints shows.

--write records what was measured, with the machine and the date, in
benchmarks/results/tests.json (the test counts always, the wall times of the runs made), which
the README's generated `tests` block is rendered from (`make docs`, benchmarks/docs_tables.py).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from provenance import stamp

REPO = Path(__file__).resolve().parent.parent
# pytest's last line: "2419 passed, 2 skipped in 412.3s", between "=" rules without -q.
SUMMARY = re.compile(r"^[= ]*(\d+ (?:passed|failed)[^\n]*?) in [0-9.]+s", re.MULTILINE)
OUT = REPO / "benchmarks" / "results" / "tests.json"
# `make test-fast`'s selection (Makefile).
FAST = ("-m", "not model and not browser")
# "2042 tests collected in 9.1s", or with a selection "1980/2042 tests collected (62 deselected)".
COLLECTED = re.compile(r"^(?:(\d+)/)?(\d+) tests? collected", re.MULTILINE)


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


def count(*selection: str) -> int:
    """How many tests pytest collects with this selection (no test runs)."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            *selection,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    found = COLLECTED.findall(proc.stdout)
    if proc.returncode != 0 or not found:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-2000:])
        raise SystemExit("pytest --collect-only failed")
    selected, total = found[-1]
    return int(selected or total)


def write(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """benchmarks/results/tests.json: the counts now, and the runs made now beside the runs
    of another kind recorded before, each with its own date."""
    if OUT.is_file():
        made = {run["what"] for run in runs}
        before = json.loads(OUT.read_text(encoding="utf-8"))["runs"]
        runs = [run for run in before if run["what"] not in made] + runs
    collected = [
        {"what": "in `make test`", "count": count(), **stamp()},
        {"what": "in `make test-fast`", "count": count(*FAST), **stamp()},
    ]
    data = {"benchmark": "benchmarks/bench_tests.py", "collected": collected, "runs": runs}
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(REPO)}; `make docs` renders it into the README")
    return collected


def summary(output: str) -> str:
    found = SUMMARY.findall(output)
    return found[-1] if found else "(no summary line)"


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
    parser.add_argument(
        "--fast", action="store_true", help="only `make test-fast`'s tests, in parallel"
    )
    parser.add_argument("--count-only", action="store_true", help="count the tests, run none")
    parser.add_argument("--write", action="store_true", help=f"record in {OUT.relative_to(REPO)}")
    parser.add_argument("--workers", default="auto", help="pytest-xdist workers (default auto)")
    args = parser.parse_args()
    runs: list[dict[str, Any]] = []
    if args.count_only:
        counts = write(runs) if args.write else [{"count": count()}, {"count": count(*FAST)}]
        print(f"tests collected: {counts[0]['count']}, in `make test-fast`: {counts[1]['count']}")
        return 0
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)")
    selection = FAST if args.fast else ()
    label = "`make test-fast`'s pytest" if args.fast else "`make test`'s pytest"
    started = stamp()
    wall_n, out_n = run_pytest(
        "-n", args.workers, "--dist", "worksteal", "--durations=20", *selection
    )
    print(f"parallel (-n {args.workers}): {wall_n:.1f} s wall, {summary(out_n)}")
    runs.append(
        {
            "what": f"{label}, `-n {args.workers}`",
            "wall_s": round(wall_n, 1),
            "summary": summary(out_n),
            **started,
        }
    )
    print("20 slowest tests of the parallel run:")
    for line in slowest(out_n):
        print(f"  {line}")
    if not (args.parallel or args.fast):
        started = stamp()
        wall_1, out_1 = run_pytest()
        print(f"one process: {wall_1:.1f} s wall, {summary(out_1)}")
        print(f"ratio parallel / one process: {wall_n / wall_1:.2f}")
        runs.append(
            {
                "what": "the same tests in one process",
                "wall_s": round(wall_1, 1),
                "summary": summary(out_1),
                **started,
            }
        )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    if args.write:
        write(runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
