"""docs/writing-suites.md's data-file example stays true: the suite it shows is
examples/tickets/tickets.toml, its 200 rows validate, and the scripted run passes them all."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalctl.cases.loader import load_suite
from tests.cli_helpers import run_cli
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "tickets"
DOC = (REPO / "docs" / "writing-suites.md").read_text()


def test_the_doc_shows_the_example_suite_as_shipped() -> None:
    start = DOC.index("### A worked example: 200 tickets")
    body = DOC.index("```toml\n", start) + len("```toml\n")
    assert DOC[body : DOC.index("```", body)] == (EXAMPLE / "tickets.toml").read_text()


def test_the_example_has_200_rows_and_one_inline_case() -> None:
    suite = load_suite(EXAMPLE / "tickets.toml")
    assert len(suite.cases) == 201
    row = next(c for c in suite.cases if c.id == "billing-001")
    assert row.input.model_dump()["prompt"] == (
        "Ticket (via email): I was charged twice for order A10000\nQueue?"
    )
    assert row.features == ["email"]
    assert [a.name for a in row.assertions] == ["queue", "one-word", "not-contains:I cannot"]
    inline = suite.cases[0]
    assert inline.id == "polite-billing"
    # Its own `one-word` replaces the default of that name.
    assert [a.name for a in inline.assertions] == ["one-word", "queue", "not-contains:I cannot"]
    assert inline.assertions[0].params.model_dump()["pattern"] == r"^\W*billing\W*$"


def test_the_example_runs_as_the_doc_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite, script = str(EXAMPLE / "tickets.toml"), str(EXAMPLE / "scripts" / "replies.toml")
    validated = run_cli(capsys, "cases", "validate", suite, "--script", script)
    assert validated.code == 0, validated.err
    assert "ok 201 cases in 1 suite" in validated.out
    out = tmp_path / "out"
    ran = run_cli(
        capsys,
        *("run", "--provider", "scripted", "--script", script, "--cases", suite),
        *("--out", str(out)),
    )
    assert ran.code == 0, ran.err
    results = json.loads((out / "results.json").read_text())
    assert {c["status"] for c in results["cases"]} == {"pass"}
    assert len(results["cases"]) == 201
