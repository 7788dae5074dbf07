"""Data files in linear time (issue 29): each row of a `cases_from` file costs the loader the
same work however many rows the file has, and a 50,000-column header is read once, not once
per column. Work is counted in interpreter steps inside evalctl, not timed: a step count
does not depend on the machine or its load (the speed itself is
benchmarks/bench_datafile_suite.py's)."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from evalctl.cases.loader import OtherCases, load_suite
from evalctl.errors import BadInputError
from tests.test_datafile_suites import ISSUE_EXAMPLE

EVALCTL = str(Path(load_suite.__code__.co_filename).resolve().parent.parent)


def _suite(root: Path, rows: int, extra_columns: int = 0, suffix: str = "csv") -> Path:
    (root / "data").mkdir(parents=True)
    extra = [f"c{n}" for n in range(extra_columns)]
    records = [
        {"id": f"t{n}", "ticket": f"Ticket {n}: a question about billing", "expected": "billing"}
        for n in range(rows)
    ]
    data = root / "data" / f"tickets.{suffix}"
    if suffix == "csv":
        with data.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(["id", "ticket", "expected", *extra])
            for record in records:
                writer.writerow([*record.values(), *extra])
    elif suffix == "jsonl":
        data.write_text("".join(json.dumps(record) + "\n" for record in records))
    elif suffix == "json":
        data.write_text(json.dumps(records))
    else:  # toml
        data.write_text("".join(f"[[row]]\n{_toml_table(record)}" for record in records))
    suite = root / "tickets.toml"
    suite.write_text(ISSUE_EXAMPLE.replace("data/tickets.csv", f"data/tickets.{suffix}"))
    return suite


def _toml_table(record: dict[str, str]) -> str:
    return "".join(f"{key} = {json.dumps(value)}\n" for key, value in record.items())


def _steps(load: Callable[[], Any]) -> int:
    """How many bytecode steps evalctl's own code takes to run `load` (its libraries'
    frames are not traced)."""
    count = 0

    def trace(frame: FrameType, event: str, _arg: Any) -> Any:
        nonlocal count
        if event == "call":
            if not frame.f_code.co_filename.startswith(EVALCTL):
                return None
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
        elif event == "opcode":
            count += 1
        return trace

    sys.settrace(trace)
    try:
        load()
    finally:
        sys.settrace(None)
    return count


@pytest.mark.parametrize("suffix", ["csv", "jsonl", "json", "toml"])
def test_each_row_costs_the_same_work_however_many_rows_the_file_has(
    tmp_path: Path, suffix: str
) -> None:
    small = _suite(tmp_path / "small", 300, suffix=suffix)
    large = _suite(tmp_path / "large", 600, suffix=suffix)
    load_suite(small)  # imports and the registry, once
    assert len(load_suite(large).cases) == 600
    per_row_small = _steps(lambda: load_suite(small)) / 300
    per_row_large = _steps(lambda: load_suite(large)) / 600
    # Linear: the same per row (a little slack for the suite's fixed cost, spread thinner).
    # Each case once copied every other case's id: twice the rows, twice the work per row.
    assert per_row_large < per_row_small * 1.15, (per_row_small, per_row_large)


def test_the_other_cases_a_case_may_name_are_every_id_but_its_own() -> None:
    """A view over the suite's one set of ids, not a copy per case (the loader's naming
    rules themselves: tests/test_retrieval_kind.py)."""
    others = OtherCases(frozenset({"a", "b", "c"}), "b")
    assert "a" in others and "c" in others
    assert "b" not in others and "d" not in others
    assert sorted(others) == ["a", "c"] and len(others) == 2
    assert len(OtherCases(frozenset({"a"}), "z")) == 1


def test_a_50000_column_header_loads_and_a_repeated_column_is_named(tmp_path: Path) -> None:
    suite = _suite(tmp_path / "wide", 3, extra_columns=50_000)
    cases = load_suite(suite).cases
    assert [c.id for c in cases] == ["t0", "t1", "t2"]
    assert len(cases[0].vars) == 50_002 and cases[2].vars["c49999"] == "c49999"
    data = tmp_path / "wide" / "data" / "tickets.csv"
    lines = data.read_text().splitlines()
    data.write_text("\n".join([lines[0] + ",c17", *lines[1:]]) + "\n")
    with pytest.raises(BadInputError) as info:
        load_suite(suite)
    assert "column 'c17' appears twice" in str(info.value)
