"""How long a suite of 500 CSV rows, with a template and defaults, takes to validate and to
run on the scripted provider: evalctl's own time, since the scripted provider answers at
once (issue 22's target: under 2 s).

Writes the issue's example suite (`cases_from`, `[suite.case_template]`, `[suite.defaults]`)
over a generated CSV in a temporary directory, then times, as subprocesses (interpreter
start-up included, as a user meets it), `evalctl cases validate` and `evalctl run
--provider scripted`, the same run over the same cases written as [[case]] tables (what the
data file costs beyond them), and, in this process, the loading alone. Prints the median of
N runs, wall and CPU: on a shared machine the CPU time is evalctl's own.

Then the growth (issue 29's target: 200,000 rows validate in well under a minute on 2
cores): `evalctl cases validate` on 10k, 100k and 200k rows of the same suite, once each,
printing rows per second (by CPU time, and by wall time) and the peak memory. Linear work
keeps rows per second flat as the file grows; the loader was once quadratic in its rows.

    python benchmarks/bench_datafile_suite.py [--rows 500] [--runs 3] [--scale 10000,100000,200000]
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

# The issue's example suite, verbatim, as the test that runs it holds it.
from tests.test_datafile_suites import ISSUE_EXAMPLE as SUITE  # noqa: E402

LABELS = ("billing", "bug", "account", "shipping")
# One reply for every case: it names every label, so each row's `contains` passes.
SCRIPT = '[[default]]\ncontent = "billing bug account shipping"\n'


def _write(root: Path, rows: int) -> Path:
    (root / "data").mkdir()
    with (root / "data" / "tickets.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "ticket", "expected"])
        for n in range(rows):
            label = LABELS[n % len(LABELS)]
            writer.writerow([f"t{n:04d}", f"Ticket {n}: a question about {label}, please", label])
    (root / "script.toml").write_text(SCRIPT)
    suite = root / "tickets.toml"
    suite.write_text(SUITE)
    return suite


def _write_inline(root: Path, rows: int) -> Path:
    """The same cases written out as [[case]] tables, as a converter would: the baseline
    the data file is measured against."""
    parts = ['[suite]\nname = "tickets"\nkind = "assert"\n']
    for n in range(rows):
        label = LABELS[n % len(LABELS)]
        parts.append(
            f'[[case]]\nid = "t{n:04d}"\n'
            f'input = {{ prompt = "Classify this ticket: Ticket {n}: a question about '
            f'{label}, please" }}\n'
            f'[[case.assert]]\ntype = "contains"\nvalue = "{label}"\n'
            '[[case.assert]]\ntype = "not-contains"\nvalue = "I cannot"\n'
        )
    suite = root / "inline" / "tickets.toml"
    suite.parent.mkdir()
    suite.write_text("".join(parts))
    return suite


def _median_seconds(
    argv: list[str], runs: int, cwd: Path, env: dict[str, str]
) -> tuple[float, float]:
    """Median wall and CPU (user + system) seconds of `argv`. On a shared machine the CPU
    time is evalctl's own; the wall time adds other processes' turns and disk waits (the
    journal fsyncs each finished case)."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True, cwd=cwd, env=env)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def _validate_once(rows: int, cli: list[str]) -> tuple[float, float, int]:
    """`evalctl cases validate` on a suite of `rows` rows: wall and CPU seconds, and the
    peak resident memory (KiB) of that one process."""
    with tempfile.TemporaryDirectory(prefix="bench-datafile-scale-") as tmp:
        root = Path(tmp)
        suite = _write(root, rows)
        env = {**os.environ, "EVALCTL_HOME": str(root / "home")}
        started = time.perf_counter()
        proc = subprocess.Popen(
            [*cli, "cases", "validate", str(suite)],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        assert proc.stderr is not None
        err = proc.stderr.read()
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            raise SystemExit(f"validate of {rows} rows failed: {err.decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def scale(sizes: list[int]) -> None:
    """Rows per second of `cases validate` at each size: flat when the work is linear."""
    cli = [sys.executable, "-m", "evalctl.cli"]
    load = f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs"
    print(f"\ncases validate, by rows ({load})")
    print("    rows    cpu s   wall s   rows/s (cpu)   rows/s (wall)   peak MiB")
    rates = []
    for rows in sizes:
        wall, cpu, peak_kib = _validate_once(rows, cli)
        rates.append(rows / cpu)
        print(
            f"{rows:8d} {cpu:8.1f} {wall:8.1f} {rows / cpu:14,.0f} {rows / wall:15,.0f}"
            f" {peak_kib / 1024:10.0f}"
        )
    if len(rates) > 1:
        print(
            f"ratio rows/s (cpu) at {sizes[-1]:,} rows vs {sizes[0]:,}: "
            f"{rates[-1] / rates[0]:.2f} (1.00: linear; {sizes[0] / sizes[-1]:.2f}: quadratic)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--scale",
        default="10000,100000,200000",
        help="row counts for the growth table, comma-separated ('' to skip it)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-datafile-") as tmp:
        root = Path(tmp)
        suite = _write(root, args.rows)
        env = {**os.environ, "EVALCTL_HOME": str(root / "home")}
        cli = [sys.executable, "-m", "evalctl.cli"]
        script = str(root / "script.toml")

        def run_argv(path: Path, out: str) -> list[str]:
            flags = ["--provider", "scripted", "--script", script, "--cases", str(path)]
            return [*cli, "run", *flags, "--out", str(root / out)]

        inline = _write_inline(root, args.rows)
        validate = _median_seconds([*cli, "cases", "validate", str(suite)], args.runs, root, env)
        run = _median_seconds(run_argv(suite, "out"), args.runs, root, env)
        run_inline = _median_seconds(run_argv(inline, "out-inline"), args.runs, root, env)
        bare = _median_seconds([sys.executable, "-c", "pass"], args.runs, root, env)

        from evalctl.cases.loader import load_suite

        load_suite(suite)  # the first load imports the registry's plugins
        started = time.perf_counter()
        loaded = load_suite(suite)
        load = time.perf_counter() - started
    print(f"rows                            {args.rows:6d}  ({len(loaded.cases)} cases loaded)")
    print(f"load_suite, in process          {load * 1000:6.0f} ms")
    print("                                  wall ms   cpu ms")
    for label, (wall, cpu) in (
        ("evalctl cases validate", validate),
        ("evalctl run --provider scripted", run),
        ("  the same cases written inline", run_inline),
        ("python -c pass", bare),
    ):
        print(f"{label:32s}{wall * 1000:7.0f}  {cpu * 1000:7.0f}")
    print("target: run < 2000 ms of evalctl's own (cpu) time")
    if args.scale:
        scale([int(n) for n in args.scale.split(",")])


if __name__ == "__main__":
    main()
