"""The figures README.md and docs/*.md carry between generated markers, rendered from committed
files only, so that they are the same on any machine (`make docs`; tests/test_doc_figures.py
fails when a block differs from what this renders).

A block is

    <!-- generated:NAME (any note for the reader) -->
    ... what render(NAME) returns ...
    <!-- /generated:NAME -->

and NAME is one of BLOCKS:

- `tests`: the test suite's size and wall times, from benchmarks/results/tests.json (written by
  `python benchmarks/bench_tests.py --write`), each figure with the machine and date it was
  measured on;
- `bench`: the ratio lines each benchmark of `make bench` printed the last time it ran, from
  benchmarks/results/bench.json (written by benchmarks/run_all.py), with the machine, date and
  load average of that run;
- `quality`: the committed local baseline's quality table, as `evalctl report
  baselines/local.json --markdown -` prints it.

    python benchmarks/docs_tables.py           # rewrite every stale block in place
    python benchmarks/docs_tables.py --check   # exit 1 naming each stale block, write nothing
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
TESTS_JSON = RESULTS / "tests.json"
BENCH_JSON = RESULTS / "bench.json"
REFRESH = "make docs"

# The body runs from the line after the opening marker to the closing marker's line; the name
# must match at both ends, so one block cannot swallow the next.
BLOCK = re.compile(
    r"(?P<open><!-- generated:(?P<name>[a-z0-9-]+)\b[^>]*-->\n)"
    r"(?P<body>.*?)"
    r"(?P<close><!-- /generated:(?P=name) -->)",
    re.DOTALL,
)
OPENING = re.compile(r"<!-- generated:([a-z0-9-]+)\b")


def doc_files() -> list[Path]:
    """The user docs a newcomer reads: README.md and docs/*.md."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def _minutes(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60}m{whole % 60:02d}s" if whole >= 60 else f"{seconds:.1f} s"


def _measured_on(record: dict[str, Any]) -> str:
    load = record.get("load_average")
    busy = f", load average {load:.1f} at the start" if isinstance(load, (int, float)) else ""
    return f"{record['date']}, {record['machine']}{busy}"


def render_tests() -> str:
    data = json.loads(TESTS_JSON.read_text(encoding="utf-8"))
    rows = ["| what | figure | measured on |", "| --- | --- | --- |"]
    for entry in data["collected"]:
        rows.append(
            f"| tests {entry['what']} (`pytest --collect-only`) | {entry['count']:,} "
            f"| {_measured_on(entry)} |"
        )
    for run in data["runs"]:
        rows.append(
            f"| {run['what']}, wall time | {_minutes(run['wall_s'])}: {run['summary']} "
            f"| {_measured_on(run)} |"
        )
    if not data["runs"]:
        rows.append(
            "| the suite's wall time | not measured yet: `python benchmarks/bench_tests.py "
            "--write` | |"
        )
    return "\n".join(rows) + "\n"


def render_bench() -> str:
    data = json.loads(BENCH_JSON.read_text(encoding="utf-8"))["benchmarks"]
    rows = ["| benchmark | ratios it printed | measured on |", "| --- | --- | --- |"]
    for name, entry in data.items():
        ratios = "; ".join(entry["ratios"]).replace("|", "\\|") or "(no ratio line)"
        rows.append(f"| `{name}` | {ratios} | {_measured_on(entry)} |")
    return "\n".join(rows) + "\n"


def render_quality() -> str:
    # In-process, the same functions `evalctl report FILE --markdown -` calls.
    from evalctl.reports.runbook import render_markdown
    from evalctl.results.document import load_document

    return render_markdown(load_document(REPO / "baselines" / "local.json"))


BLOCKS: dict[str, Callable[[], str]] = {
    "tests": render_tests,
    "bench": render_bench,
    "quality": render_quality,
}


class UnknownBlockError(ValueError):
    """A marker names a block this module cannot render, or opens one it never closes."""


def render(text: str, where: str = "") -> str:
    """`text` with the body of every generated block replaced by what renders it now."""
    found = [m.group("name") for m in BLOCK.finditer(text)]
    opened = OPENING.findall(text)
    if sorted(found) != sorted(opened):
        unclosed = sorted(set(opened) - set(found)) or sorted(opened)
        raise UnknownBlockError(f"{where}: <!-- generated:{unclosed[0]} --> is never closed")
    for name in found:
        if name not in BLOCKS:
            raise UnknownBlockError(f"{where}: no renderer for block {name!r} ({sorted(BLOCKS)})")
    cache: dict[str, str] = {}

    def body(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in cache:
            cache[name] = BLOCKS[name]()
        return match.group("open") + cache[name] + match.group("close")

    return BLOCK.sub(body, text)


def stale_blocks() -> list[str]:
    """'FILE: NAME' for each block whose committed body differs from what renders now."""
    stale = []
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        fresh = render(text, str(path.relative_to(REPO)))
        if fresh != text:
            now = {m.group("name"): m.group("body") for m in BLOCK.finditer(fresh)}
            for m in BLOCK.finditer(text):
                if now[m.group("name")] != m.group("body"):
                    stale.append(f"{path.relative_to(REPO)}: {m.group('name')}")
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 on a stale block")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_blocks()
        for line in stale:
            print(f"stale: {line} (run {REFRESH})")
        return 1 if stale else 0
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        fresh = render(text, str(path.relative_to(REPO)))
        if fresh != text:
            path.write_text(fresh, encoding="utf-8")
            print(f"rewrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
