"""How long `evalctl --help` takes, against a bare Python start-up, measured in one run.

`evalctl --help` imports typer and rich and nothing else of weight (command modules load
only when their command runs; vendor SDKs only when a provider is used), so it should cost
little beyond the interpreter. Prints the median of N runs of each and their ratio
(target: help <= 0.25 s on the project's 2-core machine).

    python benchmarks/bench_cli_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def _median_seconds(argv: list[str], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv, check=True, capture_output=True)
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    bare = _median_seconds([sys.executable, "-c", "pass"], args.runs)
    help_ = _median_seconds([sys.executable, "-m", "evalctl.cli", "--help"], args.runs)
    vendor = _median_seconds(
        [sys.executable, "-c", "import anthropic, google.genai, grpc, llama_cpp"], args.runs
    )
    print(f"python -c pass            {bare * 1000:7.0f} ms")
    print(f"evalctl --help            {help_ * 1000:7.0f} ms")
    print(f"import of vendor SDKs     {vendor * 1000:7.0f} ms  (what lazy imports avoid)")
    print(f"ratio help / bare python  {help_ / bare:7.2f}  (help target <= 250 ms)")
    print(f"ratio help / vendor SDKs  {help_ / vendor:7.2f}  (target < 1: help stays cheap)")


if __name__ == "__main__":
    main()
