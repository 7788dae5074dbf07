"""The harness at scale (issue 41): N single-turn cases from a CSV against the project's fake
OpenAI-compatible server, which answers every request after a fixed latency, at `-j J`.

The server (evalctl.fakes.llm_server) runs in this process; `evalctl run --provider openai`
runs as a subprocess, timed from its start to its exit with its results written, as a user
waits for it. A scheduler that kept J requests in flight all along would need
N x latency / J seconds (the ideal); the benchmark prints:

- wall / ideal (1.00: the server sets the pace; above it, the harness does);
- evalctl's CPU per case (user + system of the evalctl process, from wait4);
- the peak number of requests the server had in flight at once (it counts them);
- evalctl's peak RSS.

It measures with the run store on (the default, recording into a temporary EVALCTL_HOME),
and once more with `--no-store` (what recording costs).

    python benchmarks/bench_scale.py [--cases 600] [--latency-ms 100] [-j 64]
                                     [--profile FILE] [--no-store-run/--store-only]

`--inspect PATH` also runs the same cases through Inspect AI (`PATH`: the `inspect` command of a
venv of the benchmark's own, e.g. `python -m venv /tmp/inspect && /tmp/inspect/bin/pip install
inspect-ai openai`; never a dependency of evalctl), on the same server, in the same run;
`--promptfoo PATH` the same through promptfoo 0.121 (node; `npm install promptfoo@0.121`,
PATH its node_modules/.bin/promptfoo), with its SQLite store on, `icontains` for `contains`.

`--profile FILE` runs evalctl under cProfile once and writes its stats to FILE (read them
with `python -m pstats FILE`), as issue 41's profile of 1,000 cases was taken.
The issue's figure is `--cases 3000 --latency-ms 200 -j 64`; `make bench` runs it small.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from evalctl.fakes.llm_server import FakeLLMServer  # noqa: E402
from evalctl.fakes.script import ServerScript, Step  # noqa: E402

LABELS = ("billing", "bug", "account", "shipping")
# One reply for every case: it names every label, so each row's `contains` passes.
REPLY = "billing bug account shipping"
SUITE = """\
[suite]
name = "tickets"
kind = "assert"
cases_from = "data/tickets.csv"

[suite.case_template]
input = { prompt = "Classify this ticket: {{ ticket }}" }
[[suite.case_template.assert]]
type = "contains"
value = "{{ expected }}"
"""


@dataclass
class Measured:
    wall_s: float
    cpu_s: float
    peak_in_flight: int
    peak_rss_mib: float
    requests: int


def write_suite(root: Path, cases: int) -> Path:
    (root / "data").mkdir(parents=True, exist_ok=True)
    with (root / "data" / "tickets.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "ticket", "expected"])
        for n in range(cases):
            label = LABELS[n % len(LABELS)]
            writer.writerow([f"t{n:05d}", f"Ticket {n}: a question about {label}, please", label])
    suite = root / "tickets.toml"
    suite.write_text(SUITE)
    return suite


def run_once(
    root: Path,
    suite: Path,
    *,
    latency_ms: float,
    jobs: int,
    out: str,
    store: bool,
    profile: Path | None = None,
    src: Path | None = None,
    progress: bool = False,
) -> Measured:
    script = ServerScript(default=Step.reply(REPLY))
    with FakeLLMServer(script, latency_ms=latency_ms) as server:
        env = {
            **os.environ,
            **server.env(),
            "EVALCTL_HOME": str(root / "home"),
            "NO_COLOR": "1",
        }
        if src is not None:
            # Another checkout's evalctl (an earlier commit), measured side by side.
            env["PYTHONPATH"] = str(src)
        prefix = [sys.executable]
        if profile is not None:
            prefix += ["-m", "cProfile", "-o", str(profile)]
        argv = [
            *prefix,
            "-m",
            "evalctl.cli",
            "run",
            "--provider",
            "openai",
            "--cases",
            str(suite),
            "-j",
            str(jobs),
            "--out",
            str(root / out),
            "--progress" if progress else "--no-progress",
            *(() if store else ("--no-store",)),
        ]
        started = time.perf_counter()
        proc = subprocess.Popen(
            argv, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        assert proc.stderr is not None
        err = proc.stderr.read()
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            raise SystemExit(f"evalctl run exited {code}: {err.decode()[-3000:]}")
        return Measured(
            wall_s=wall,
            cpu_s=usage.ru_utime + usage.ru_stime,
            peak_in_flight=server.peak_in_flight,
            peak_rss_mib=usage.ru_maxrss / 1024,
            requests=len(server.requests),
        )


INSPECT_TASK = """\
from inspect_ai import Task, task
from inspect_ai.dataset import FieldSpec, csv_dataset
from inspect_ai.scorer import includes
from inspect_ai.solver import generate, prompt_template


@task
def tickets():
    return Task(
        dataset=csv_dataset(
            "data/tickets.csv", FieldSpec(input="ticket", target="expected", id="id")
        ),
        solver=[prompt_template("Classify this ticket: {prompt}"), generate()],
        scorer=includes(),
    )
"""


def run_inspect(root: Path, inspect: Path, *, latency_ms: float, jobs: int) -> Measured:
    """The same cases through Inspect AI (`generate()`, `includes()`) and its
    OpenAI-compatible provider at `--max-connections J`, on the same fake server: Inspect
    installed in a venv of its own (`inspect` is that venv's command), never evalctl's."""
    (root / "inspect_task.py").write_text(INSPECT_TASK)
    argv = [
        str(inspect), "eval", "inspect_task.py",
        "--model", "openai-api/fake/fake-served-model",
        "--max-connections", str(jobs), "--log-dir", str(root / "inspect-logs"),
        "--display", "none", "--max-retries", "0",
    ]  # fmt: skip
    return run_tool(root, argv, lambda url: {"FAKE_BASE_URL": url, "FAKE_API_KEY": "sk-fake"},
                    latency_ms=latency_ms)  # fmt: skip


def run_promptfoo(root: Path, promptfoo: Path, *, latency_ms: float, jobs: int) -> Measured:
    """The same cases through promptfoo (`icontains`, `--max-concurrency J`, its SQLite store
    on, under a temporary config dir), on the same server. `promptfoo` is the command an
    `npm install promptfoo@0.121` put in node_modules/.bin."""
    rows = (root / "data" / "tickets.csv").read_text().splitlines()[1:]
    with (root / "promptfoo.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["ticket", "__expected"])
        for row in csv.reader(rows):
            writer.writerow([row[1], f"icontains:{row[2]}"])

    def config(url: str) -> dict[str, str]:
        (root / "promptfooconfig.yaml").write_text(
            'prompts:\n  - "Classify this ticket: {{ticket}}"\n'
            "providers:\n  - id: openai:chat:fake-served-model\n    config:\n"
            f"      apiBaseUrl: {url}\n      apiKey: sk-fake\n"
            "tests: file://promptfoo.csv\n"
        )
        return {
            "PROMPTFOO_CONFIG_DIR": str(root / "promptfoo-home"),
            "PROMPTFOO_DISABLE_TELEMETRY": "1",
            "PROMPTFOO_DISABLE_UPDATE": "1",
        }

    argv = [
        str(promptfoo), "eval", "-c", "promptfooconfig.yaml", "--max-concurrency", str(jobs),
        "--no-cache", "--no-progress-bar", "--no-table", "-o", str(root / "promptfoo.json"),
    ]  # fmt: skip
    return run_tool(root, argv, config, latency_ms=latency_ms)


def run_tool(
    root: Path, argv: list[str], env_for: Callable[[str], dict[str, str]], *, latency_ms: float
) -> Measured:
    """Another harness's command on the same cases, against a fresh fake server at the same
    latency; `env_for(base_url)` gives what points it at the server."""
    script = ServerScript(default=Step.reply(REPLY))
    with FakeLLMServer(script, latency_ms=latency_ms) as server:
        env = {**os.environ, **env_for(f"{server.url}/v1"), "NO_COLOR": "1"}
        started = time.perf_counter()
        proc = subprocess.Popen(
            argv, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        assert proc.stderr is not None
        err = proc.stderr.read()
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            raise SystemExit(f"{argv[0]} exited {code}: {err.decode()[-3000:]}")
        return Measured(
            wall_s=wall,
            cpu_s=usage.ru_utime + usage.ru_stime,
            peak_in_flight=server.peak_in_flight,
            peak_rss_mib=usage.ru_maxrss / 1024,
            requests=len(server.requests),
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=600)
    parser.add_argument("--latency-ms", type=float, default=100.0)
    parser.add_argument("-j", "--jobs", type=int, default=64)
    parser.add_argument("--profile", type=Path, default=None, help="cProfile stats file")
    parser.add_argument(
        "--store-only", action="store_true", help="skip the second run with --no-store"
    )
    parser.add_argument(
        "--baseline-src",
        type=Path,
        default=None,
        help="also measure the evalctl in this source tree (e.g. `git archive` of an earlier"
        " commit) in the same run",
    )
    parser.add_argument(
        "--progress",
        action="store_true",
        help="evalctl's progress on (into a pipe, as a CI log gets it: a line per case)",
    )
    parser.add_argument(
        "--inspect",
        type=Path,
        default=None,
        help="the `inspect` command of a venv holding inspect-ai: measure it on the same work",
    )
    parser.add_argument(
        "--promptfoo",
        type=Path,
        default=None,
        help="the `promptfoo` command (npm install promptfoo@0.121): measure it on the same work",
    )
    args = parser.parse_args()
    # Each line as it is measured: the whole run takes minutes at the scale.
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    ideal = args.cases * args.latency_ms / 1000 / args.jobs
    load = f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs"
    print(
        f"{args.cases} cases from a CSV, fake OpenAI-compatible server at {args.latency_ms:g} ms,"
        f" -j {args.jobs} ({load}); ideal {ideal:.2f} s"
    )
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        root = Path(tmp)
        suite = write_suite(root, args.cases)
        if args.profile is not None:
            m = run_once(
                root, suite, latency_ms=args.latency_ms, jobs=args.jobs, out="prof",
                store=True, profile=args.profile.resolve(),
            )  # fmt: skip
            print(f"profiled run: wall {m.wall_s:.2f} s, stats in {args.profile}")
            return
        runs: list[tuple[str, bool, Path | None]] = [("store on", True, None)]
        if not args.store_only:
            runs.append(("--no-store", False, None))
        if args.baseline_src is not None:
            runs.append(("baseline", True, args.baseline_src.resolve()))
        print(
            "                 wall s   wall/ideal   cpu s   cpu ms/case   peak in flight   RSS MiB"
        )
        results = {}

        def report(label: str, m: Measured) -> None:
            print(
                f"{label:15s} {m.wall_s:7.2f} {m.wall_s / ideal:11.2f} {m.cpu_s:8.2f}"
                f" {m.cpu_s * 1000 / args.cases:12.2f} {m.peak_in_flight:16d}"
                f" {m.peak_rss_mib:9.0f}"
            )

        for n, (label, store, src) in enumerate(runs):
            m = run_once(
                root, suite, latency_ms=args.latency_ms, jobs=args.jobs,
                out=f"out-{n}", store=store, src=src, progress=args.progress,
            )  # fmt: skip
            if m.requests != args.cases:
                raise SystemExit(f"the server saw {m.requests} requests for {args.cases} cases")
            results[label] = m
            report(label, m)
        if args.inspect is not None:
            m = run_inspect(root, args.inspect, latency_ms=args.latency_ms, jobs=args.jobs)
            results["inspect-ai"] = m
            report("inspect-ai", m)
        if args.promptfoo is not None:
            m = run_promptfoo(root, args.promptfoo, latency_ms=args.latency_ms, jobs=args.jobs)
            results["promptfoo"] = m
            report("promptfoo", m)
    on = results["store on"]
    print(
        f"ratio wall/ideal {on.wall_s / ideal:.2f} ({args.cases} cases, {args.latency_ms:g} ms,"
        f" -j {args.jobs}; cpu {on.cpu_s * 1000 / args.cases:.1f} ms/case;"
        f" peak in flight {on.peak_in_flight}/{args.jobs})"
    )
    if "baseline" in results:
        base = results["baseline"]
        print(
            f"ratio cpu vs baseline {on.cpu_s / base.cpu_s:.2f},"
            f" wall vs baseline {on.wall_s / base.wall_s:.2f}"
        )
    for name in ("inspect-ai", "promptfoo"):
        if name in results:
            other = results[name]
            print(
                f"ratio wall vs {name} {on.wall_s / other.wall_s:.2f},"
                f" cpu vs {name} {on.cpu_s / other.cpu_s:.2f}"
                f" ({name}: {other.wall_s:.1f} s wall, {other.cpu_s:.1f} s cpu)"
            )


if __name__ == "__main__":
    main()
