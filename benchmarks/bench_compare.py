"""`evalctl compare` and `evalctl report --html` on a 10,000-case results file, against a
plain `json.load` of the same file, measured in one run.

The file is built from a real run: the scripted provider replays the perfect release-assets
recipes (18 cases, transcripts and checks as a model run writes them), and its cases are
copied under new ids up to 10,000. The baseline is written from that run; the compared run
has every tenth case failing one check (1,000 regressions). Both commands run in-process,
their output to /dev/null, as a user would run them (file read and validation included).
Targets: compare <= 1.5x json.load (issue 33: it reads the file's bytes in pydantic-core and
never builds the conversations, evalctl.results.scores); the HTML page bounded in size
whatever the case count.

    python benchmarks/bench_compare.py [--cases 10000] [--runs 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SCRIPT = REPO / "cases" / "scripts" / "release-assets.perfect.toml"


def _seed_run(out: Path) -> dict[str, object]:
    subprocess.run(
        [
            sys.executable, "-m", "evalctl.cli", "run", "--provider", "scripted",
            "--script", str(SCRIPT), "--suite", "release-assets", "--out", str(out),
            "--no-progress",
        ],
        check=True, capture_output=True, cwd=REPO,
    )  # fmt: skip
    return json.loads((out / "results.json").read_text())  # type: ignore[no-any-return]


def _scaled(seed: dict[str, object], n: int, regress_every: int) -> dict[str, object]:
    base = seed["cases"]
    assert isinstance(base, list)
    cases = []
    for i in range(n):
        case = json.loads(json.dumps(base[i % len(base)]))
        case["id"] = f"{case['id']}-{i:05d}"
        case["key"] = f"{case['suite']}/{case['id']}"
        if regress_every and i % regress_every == 0:
            case["status"] = "fail"
            check = case["checks"][0]
            check.update(status="fail", passed=False, actual="broken")
            for attempt in case["attempts"]:
                attempt["status"] = "fail"
        cases.append(case)
    scaled = dict(seed)
    scaled["cases"] = cases
    settings = dict(seed["settings"])  # type: ignore[call-overload]
    scaled["settings"] = settings
    return scaled


def _median(fn: Callable[[], object], runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def _cli(*args: str) -> int:
    from evalctl.cli import app as cli_app

    old = sys.argv
    sys.argv = ["evalctl", *args]
    cli_app.app.registered_commands.clear()
    cli_app.app.registered_groups.clear()
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            cli_app.main()
    except SystemExit as exc:
        return int(exc.code or 0)
    finally:
        sys.argv = old
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ["COLUMNS"] = "120"
    with tempfile.TemporaryDirectory(prefix="evb-compare-") as raw:
        tmp = Path(raw)
        seed = _seed_run(tmp / "seed")
        good = tmp / "good" / "results.json"
        bad = tmp / "bad" / "results.json"
        for path, every in ((good, 0), (bad, 10)):
            path.parent.mkdir()
            path.write_text(json.dumps(_scaled(seed, args.cases, every)))
        baseline = tmp / "baseline.json"
        code = _cli("baseline", "--from", str(good), "--out", str(baseline))
        assert code == 0, f"baseline exited {code}"
        size = bad.stat().st_size

        def load() -> object:
            with bad.open(encoding="utf-8") as fh:
                return json.load(fh)

        codes: list[int] = []
        html = tmp / "report.html"
        t_load = _median(load, args.runs)
        t_compare = _median(lambda: codes.append(_cli("compare", str(baseline), str(bad))), 1)
        t_compare = min(
            t_compare,
            _median(lambda: codes.append(_cli("compare", str(baseline), str(bad))), args.runs),
        )
        t_html = _median(lambda: _cli("report", str(bad), "--html", str(html)), args.runs)
        page = html.stat().st_size
    print(f"results file                {args.cases} cases, {size / 2**20:.1f} MiB")
    print(f"json.load                   {t_load * 1000:7.0f} ms")
    print(f"evalctl compare             {t_compare * 1000:7.0f} ms  (exit {codes[-1]})")
    print(f"evalctl report --html       {t_html * 1000:7.0f} ms  page {page / 2**10:.0f} KiB")
    print(f"ratio compare / json.load   {t_compare / t_load:7.2f}  (target <= 1.5)")
    print(f"ratio report / json.load    {t_html / t_load:7.2f}")
    print(f"load avg                    {os.getloadavg()[0]:7.2f}")


if __name__ == "__main__":
    main()
