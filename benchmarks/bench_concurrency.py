"""Wall time of a cloud run at `-j 16` against the ideal, on the fake LLM server.

100 single-turn cases, each reply delayed 200 ms by the fake server: a perfect scheduler
needs 100 x 0.2 / 16 = 1.25 s. Prints the measured wall time and the ratio (target <= 1.3).
Note the floor: 100 cases in waves of 16 take 7 waves, so even a perfect run scores 1.12.

The run goes through the real runner and the real SDK (`execute_run`, as `evalctl run`
does), in process so interpreter start-up is not counted; an untimed warm-up run imports the
SDK first. The fake server runs in its own process, as a remote API would: in process it
would compete with the client for the GIL and inflate the number.

    python benchmarks/bench_concurrency.py [--cases 100] [--latency-ms 200] [-j 16]
                                           [--provider anthropic|gemini] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # for the test-only echo suite kind in tests/

from evalctl.config import Settings  # noqa: E402
from evalctl.retry import RetryPolicy  # noqa: E402
from evalctl.runner.api import RunRequest  # noqa: E402
from evalctl.runner.execute import execute_run  # noqa: E402
from tests import echo_kind  # noqa: E402


def prompt(i: int) -> str:
    return f"case {i}."  # the period keeps "case 1." from matching "case 10."


def write_suite(n: int, directory: Path) -> Path:
    lines = ['[suite]\nname = "bench"\nkind = "echo"\nsystem_prompt = "Answer exactly."']
    for i in range(n):
        lines.append(
            f'[[case]]\nid = "c{i:03d}"\ninput = {{ prompt = "{prompt(i)}" }}\n'
            f'expected = {{ answer = "answer{i}" }}'
        )
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "bench.toml"
    path.write_text("\n\n".join(lines) + "\n")
    return path


def write_script(n: int, path: Path) -> Path:
    conversations = [{"match": prompt(i), "turns": [{"text": f"answer{i}"}]} for i in range(n)]
    path.write_text(json.dumps({"conversations": conversations}))
    return path


@contextmanager
def fake_server(script: Path, latency_ms: float) -> Iterator[dict[str, str]]:
    """Start the dev server in a subprocess; yield the env that points the SDKs at it."""
    argv = [sys.executable, "-m", "evalctl.fakes.llm_server", "--port", "0", "--quiet"]
    argv += ["--latency-ms", str(latency_ms), "--script", str(script)]
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        env: dict[str, str] = {}
        for line in proc.stdout:
            if line.strip().startswith("export "):
                name, _, value = line.strip().removeprefix("export ").partition("=")
                env[name] = value
            if line.startswith("Ctrl-C"):
                break
        yield env
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def run_once(env: dict[str, str], suite: Path, out: Path, provider: str, jobs: int) -> float:
    request = RunRequest(
        provider=provider, paths=[suite], out_dir=out, concurrency=jobs, show_progress=False
    )
    retry = RetryPolicy(rng=random.Random(0))
    started = time.perf_counter()
    outcome = execute_run(request, Settings(), env, retry=retry)
    wall = time.perf_counter() - started
    summary = outcome.result.summary
    if summary.passed != summary.total:
        raise SystemExit(f"only {summary.passed}/{summary.total} passed: benchmark invalid")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--latency-ms", type=float, default=200)
    parser.add_argument("-j", "--concurrency", type=int, default=16)
    parser.add_argument("--provider", choices=["anthropic", "gemini"], default="anthropic")
    parser.add_argument("--repeat", type=int, default=3, help="report the median of N runs")
    args = parser.parse_args()

    echo_kind.install()
    ideal = args.cases * args.latency_ms / 1000 / args.concurrency
    with tempfile.TemporaryDirectory(prefix="bench-j-") as tmp:
        root = Path(tmp)
        script = write_script(args.cases, root / "script.json")
        with fake_server(script, args.latency_ms) as env:
            run_once(env, write_suite(4, root / "warm"), root / "warm-out", args.provider, 4)
            suite = write_suite(args.cases, root / "suite")
            walls = [
                run_once(env, suite, root / f"out{n}", args.provider, args.concurrency)
                for n in range(args.repeat)
            ]
    wall = statistics.median(walls)
    shape = f"{args.cases} x {args.latency_ms:g} ms at -j {args.concurrency}"
    print(f"provider                  {args.provider} (real SDK, fake server process)")
    print(f"cases x latency           {shape}")
    print(f"ideal                     {ideal:7.3f} s")
    runs = ", ".join(f"{w:.3f}" for w in walls)
    print(f"wall (median of {args.repeat})       {wall:7.3f} s   runs: {runs}")
    if ideal > 0:
        print(f"ratio wall / ideal        {wall / ideal:7.3f}   (target <= 1.3)")


if __name__ == "__main__":
    main()
