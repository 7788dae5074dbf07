"""Figures in README.md and docs/*.md come from somewhere: a generated block rendered from
committed benchmark output (benchmarks/docs_tables.py, `make docs`) that is current, or prose
that names the machine and the date the figure was measured on.

A figure is a timing (`79 s`, `8m19s`, `3.5 min`, `128 ms`), a speed (`35.2 tok/s`), a ratio
(`5x`, `1.3` and a multiplication sign, `ratio 0.91`) or a test count (`1,629 tests`, pytest's
`2,040 passed, 2 skipped`). It stands in a unit: a paragraph, a list item, a table row or a
fenced block. The unit passes when it, or the paragraph that leads its list, table or fenced
block, holds a date (2026-12-06) and a machine (`2-core`, `16 cores`, a CPU or GPU name). Text
in inline code is a literal (a flag, a message, `timeout_s = 120`), not a figure. Figures that
are settings or limits rather than measurements are listed, each with its reason, in
tests/data/doc_figures_allowed.toml; an entry that no longer exempts anything fails too, so the
list stays short and true.

Nothing here depends on the machine the tests run on: blocks render from committed files."""

from __future__ import annotations

import json
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import docs_tables
from docs_tables import (
    BLOCK,
    REFRESH,
    UnknownBlockError,
    doc_files,
    render,
    stale_blocks,
)

ALLOWED = REPO / "tests" / "data" / "doc_figures_allowed.toml"

_NUM = r"(?<![\w.,/])\d[\d,]*(?:\.\d+)?"
_RANGE = rf"{_NUM}(?:\s?(?:\u2013|-|to)\s?\d[\d,]*(?:\.\d+)?)?"
FIGURE = re.compile(
    "|".join(
        [
            # a duration
            rf"{_RANGE}\s?(?:ms|µs|s|sec|seconds?|min|minutes?|hours?)(?!\w)",
            r"(?<!\w)\d+m\d+(?:\.\d+)?s(?!\w)",
            # a speed
            rf"{_RANGE}\s?tok/s(?!\w)",
            # a ratio: a factor written against its number, or named
            r"(?<![\w.])\d+(?:\.\d+)?[\u00d7x](?!\w)",
            r"\bratios?\s+(?:of\s+)?\**\d[\d.]*",
            # a test count: "N tests", or pytest's summary ("2,040 passed, 2 skipped")
            rf"{_NUM}\s+tests(?!\w)",
            rf"{_NUM}\s+passed(?=,|\s+in\b)",
        ]
    )
)
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
MACHINE = re.compile(
    r"\b\d+-core\b|\b\d+ (?:CPU )?cores\b|\bXeon\b|\bEPYC\b|\bRyzen\b|\bCore i\d\b|"
    r"\bApple M\d\b|\bGraviton\d?\b|\b[HA]100\b|\bH200\b|\bRTX\b|\bGPU\b"
)
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+\.)\s")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)


@dataclass(frozen=True)
class Unit:
    """One paragraph, list item, table row or fenced block, whitespace collapsed."""

    file: str
    line: int
    text: str
    lead: str  # the paragraph before the list, table or fenced block this unit belongs to
    code: bool  # a fenced block: every figure in it counts, backticks or not


def _collapse(lines: list[str]) -> str:
    return " ".join(" ".join(lines).split())


def units(text: str, file: str) -> list[Unit]:
    """The units of a Markdown file, generated blocks and HTML comments left out."""
    text = BLOCK.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    text = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    found: list[Unit] = []
    lead = ""  # the last plain paragraph, until a heading or a new plain paragraph
    current: list[str] = []
    start = 0
    kind = ""  # "para", "item"

    def close() -> None:
        nonlocal current, lead
        if current:
            body = _collapse(current)
            found.append(Unit(file, start, body, "" if kind == "para" else lead, False))
            if kind == "para":
                lead = body
        current = []

    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        number = i + 1
        if FENCE.match(line):
            close()
            end = i + 1
            while end < len(lines) and not FENCE.match(lines[end]):
                end += 1
            found.append(Unit(file, number, _collapse(lines[i + 1 : end]), lead, True))
            i = end + 1
            continue
        if not line.strip():
            close()
        elif line.lstrip().startswith("#"):
            close()
            lead = ""
        elif line.lstrip().startswith("|"):
            close()
            found.append(Unit(file, number, _collapse([line]), lead, False))
        elif LIST_ITEM.match(line):
            close()
            current, start, kind = [line], number, "item"
        elif current:
            current.append(line)
        else:
            current, start, kind = [line], number, "para"
        i += 1
    close()
    return found


def _masked(unit: Unit) -> str:
    """The unit's text with inline code blanked (same length, so spans line up)."""
    if unit.code:
        return unit.text
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), unit.text)


def _dated(text: str) -> bool:
    return bool(DATE.search(text) and MACHINE.search(text))


def _allowed() -> list[dict[str, str]]:
    entries = tomllib.loads(ALLOWED.read_text(encoding="utf-8"))["allow"]
    for entry in entries:
        assert set(entry) == {"file", "text", "why"} and entry["why"].strip(), entry
    return entries


def _allowed_spans(unit: Unit, entries: list[dict[str, str]]) -> list[tuple[int, int, int]]:
    spans = []
    for index, entry in enumerate(entries):
        if entry["file"] != unit.file:
            continue
        needle = " ".join(entry["text"].split())
        for m in re.finditer(re.escape(needle), unit.text):
            spans.append((m.start(), m.end(), index))
    return spans


def scan(unit: Unit, entries: list[dict[str, str]], used: set[int]) -> list[str]:
    """Each figure of the unit that neither it, its lead nor the allowlist accounts for."""
    figures = list(FIGURE.finditer(_masked(unit)))
    if not figures or _dated(unit.text) or (unit.lead and _dated(unit.lead)):
        return []
    spans = _allowed_spans(unit, entries)
    bad = []
    for figure in figures:
        covering = [i for s, e, i in spans if s <= figure.start() and figure.end() <= e]
        if covering:
            used.update(covering)
        else:
            bad.append(figure.group(0))
    return bad


def _all_units() -> list[Unit]:
    return [
        unit
        for path in doc_files()
        for unit in units(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    ]


def test_every_figure_names_its_machine_and_date() -> None:
    entries = _allowed()
    used: set[int] = set()
    problems = []
    for unit in _all_units():
        bad = scan(unit, entries, used)
        if bad:
            problems.append(f"{unit.file}:{unit.line}: {', '.join(bad)} in: {unit.text[:160]}")
    assert not problems, (
        "figures with no machine and date (say both in the same paragraph, list item or table "
        "row, or render them in a generated block from committed benchmark output, "
        "benchmarks/docs_tables.py):\n" + "\n".join(problems)
    )
    unused = [f"{e['file']}: {e['text']!r}" for i, e in enumerate(entries) if i not in used]
    assert not unused, (
        f"entries of {ALLOWED.relative_to(REPO)} that exempt no figure (remove them):\n"
        + "\n".join(unused)
    )


def test_generated_blocks_are_current() -> None:
    stale = stale_blocks()
    assert not stale, f"stale generated blocks (run {REFRESH} and commit):\n" + "\n".join(stale)


def test_the_readme_carries_the_generated_test_figures() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    names = {m.group("name") for m in BLOCK.finditer(readme)}
    assert {"tests", "bench", "quality"} <= names


def test_a_benchmark_record_renders_with_its_machine_and_date(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = {
        "ratios": ["ratio a | b 1.40 (target <= 1.5)"],
        "date": "2026-12-06",
        "machine": "2-core AMD EPYC",
        "load_average": 5.2,
    }
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"benchmarks": {"bench_x.py": record}}), encoding="utf-8")
    monkeypatch.setattr(docs_tables, "BENCH_JSON", path)
    table = docs_tables.render_bench()
    assert table.splitlines()[-1] == (
        "| `bench_x.py` | ratio a \\| b 1.40 (target <= 1.5) "
        "| 2026-12-06, 2-core AMD EPYC, load average 5.2 at the start |"
    )


# The checker's own rules, on small texts.


def _bad(text: str, file: str = "x.md") -> list[str]:
    return [f for u in units(text, file) for f in scan(u, [], set())]


def test_a_figure_without_machine_and_date_is_found() -> None:
    assert _bad("The demo took 79 s after setup.\n") == ["79 s"]
    times = "\u00d7"
    assert _bad(f"It ran 1.3{times} faster, ratio 0.91, in 8m19s.\n") == [
        f"1.3{times}",
        "ratio 0.91",
        "8m19s",
    ]
    assert _bad("- pytest: 1,629 tests in 4.9 minutes\n") == ["1,629 tests", "4.9 minutes"]
    assert _bad("| a | 35.2 tok/s |\n") == ["35.2 tok/s"]


def test_a_figure_with_machine_and_date_passes() -> None:
    assert _bad("On the 2-core machine on 2026-11-28 the demo took\n79 s in all.\n") == []
    table = "Measured on 2026-12-06, a 2-core AMD EPYC:\n\n| a | b |\n| --- | --- |\n| x | 3 s |\n"
    assert _bad(table) == []
    # A date alone, or a machine alone, is not enough; nor is a lead from another section.
    assert _bad("On 2026-11-28 it took 79 s.\n") == ["79 s"]
    assert _bad("On the 2-core machine it took 79 s.\n") == ["79 s"]
    assert _bad("On 2026-12-06, 2-core machine:\n\n## Next\n\n| x | 3 s |\n") == ["3 s"]


def test_literals_comments_and_generated_blocks_are_not_figures() -> None:
    assert _bad("Set `timeout_s = 120` or `--timeout 5s`; `7d`, `12h`.\n") == []
    assert _bad("<!-- took 5 s -->\n") == []
    assert _bad("<!-- generated:tests -->\n| x | 3 s |\n<!-- /generated:tests -->\n") == []
    # Dimensions and words that end like units are not figures.
    assert _bad("4 x 14 cells, 1,000 runs \u00d7 100 cases, k9s, 5 samples, case(s).\n") == []
    # A fenced block's figures count even though it is code.
    assert _bad("Output:\n\n```\np50 5567 ms\n```\n") == ["5567 ms"]


def test_the_allowlist_exempts_only_its_text() -> None:
    entries = [{"file": "x.md", "text": "at most 86,400 seconds", "why": "a limit"}]
    used: set[int] = set()
    (unit,) = units("A timeout of at most 86,400\nseconds; it took 3 s.\n", "x.md")
    assert scan(unit, entries, used) == ["3 s"]
    assert used == {0}


def test_a_stale_or_unknown_block_is_caught() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    match = next(m for m in BLOCK.finditer(readme) if m.group("name") == "tests")
    stale = readme.replace(match.group("body"), "| old | 1,629 tests |\n", 1)
    assert render(stale) == readme
    with pytest.raises(UnknownBlockError, match="no renderer"):
        render("<!-- generated:nope -->\nx\n<!-- /generated:nope -->\n")
    with pytest.raises(UnknownBlockError, match="never closed"):
        render("<!-- generated:tests -->\nx\n")


def test_the_test_count_is_read_from_pytests_collection_line() -> None:
    import bench_tests

    assert bench_tests.COLLECTED.findall("x\n2042 tests collected in 9.10s\n") == [("", "2042")]
    line = "1980/2042 tests collected (62 deselected) in 9.10s\n"
    assert bench_tests.COLLECTED.findall(line) == [("1980", "2042")]
