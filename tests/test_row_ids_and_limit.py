"""Ids from a row's place and text (`row_number`, the `slug` filter, `vars[...]` in
`id_template`), and `run --limit N` (issue 31)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalctl.baselines.scope import in_scope, is_filtered
from evalctl.cases.loader import load_suite
from evalctl.cases.template import SLUG_MAX, slug
from evalctl.results.io import read_run
from tests.cli_helpers import run_cli


def _suite(tmp_path: Path, id_template: str, rows: str, name: str = "rows.csv") -> Path:
    (tmp_path / name).write_text(rows)
    path = tmp_path / "s.toml"
    path.write_text(
        f'[suite]\nname = "s"\nkind = "assert"\ncases_from = "{name}"\n'
        f"id_template = {json.dumps(id_template)}\n"
        '[suite.case_template]\ninput = { prompt = "{{ question }}" }\n'
        '[[suite.case_template.assert]]\ntype = "not-contains"\nvalue = "sorry"\n'
    )
    return path


def test_row_number_counts_rows_from_one_in_file_order(tmp_path: Path) -> None:
    path = _suite(tmp_path, "q-{{ row_number }}", "question\nfirst?\n\nsecond?\nthird?\n")
    assert [c.id for c in load_suite(path).cases] == ["q-1", "q-2", "q-3"]


def test_a_whole_row_number_placeholder_is_an_id(tmp_path: Path) -> None:
    path = _suite(tmp_path, "{{ row_number }}", "question\na\nb\n")
    assert [c.id for c in load_suite(path).cases] == ["1", "2"]


def test_the_case_template_sees_the_row_number_too(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text("id,question\nx,a\ny,b\n")
    path = tmp_path / "s.toml"
    path.write_text(
        '[suite]\nname = "s"\nkind = "assert"\ncases_from = "rows.csv"\n'
        '[suite.case_template]\ninput = { prompt = "{{ row_number }}. {{ question }}" }\n'
        '[[suite.case_template.assert]]\ntype = "not-contains"\nvalue = "sorry"\n'
    )
    prompts = [c.input.model_dump()["prompt"] for c in load_suite(path).cases]
    assert prompts == ["1. a", "2. b"]


def test_slug_lowercases_joins_with_dashes_and_stops_at_48() -> None:
    assert slug("What's the  capital of France?") == "what-s-the-capital-of-france"
    assert slug("--Ünïcode & stuff--") == "n-code-stuff"
    long = slug("word " * 40)
    assert len(long) <= SLUG_MAX == 48
    assert not long.endswith("-")
    assert long.startswith("word-word")


def test_slug_makes_ids_from_question_text(tmp_path: Path) -> None:
    path = _suite(
        tmp_path,
        "{{ question | slug }}",
        'question\n"How many moons does Mars have, and what are they called in Greek myth?"\n',
    )
    (case,) = load_suite(path).cases
    assert case.id == "how-many-moons-does-mars-have-and-what-are-they"
    assert len(case.id) <= 48


def test_id_template_reaches_a_column_through_vars(tmp_path: Path) -> None:
    path = _suite(tmp_path, "t-{{ vars['ticket no'] }}", "ticket no,question\n7,a\n9,b\n")
    assert [c.id for c in load_suite(path).cases] == ["t-7", "t-9"]


SUITE_B = """\
[suite]
name = "b"
kind = "assert"
[suite.defaults]
[[suite.defaults.assert]]
type = "not-contains"
value = "sorry"
[[case]]
id = "b1"
input = { prompt = "x" }
[[case]]
id = "b2"
input = { prompt = "x" }
"""


def test_limit_runs_the_first_n_cases_of_each_suite_after_the_filters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "rows.csv").write_text("id,question,f\na1,q,keep\na2,q,drop\na3,q,keep\na4,q,keep\n")
    (cases / "a.toml").write_text(
        '[suite]\nname = "a"\nkind = "assert"\ncases_from = "rows.csv"\n'
        '[suite.case_template]\ninput = { prompt = "{{ question }}" }\nfeatures = ["{{ f }}"]\n'
        '[[suite.case_template.assert]]\ntype = "not-contains"\nvalue = "sorry"\n'
    )
    (cases / "b.toml").write_text(SUITE_B)
    out = tmp_path / "out"
    ran = run_cli(
        capsys,
        "run",
        "--provider",
        "echo",
        "--cases",
        str(cases),
        "--limit",
        "2",
        "--out",
        str(out),
        "--no-progress",
    )
    assert ran.code == 0, ran.out + ran.err
    run = read_run(out / "results.json")
    assert [c.key for c in run.cases] == ["a/a1", "a/a2", "b/b1", "b/b2"]
    assert run.settings.limit == 2
    # A case the limit left out is not selected, not orphaned, for compare and baseline.
    assert is_filtered(run)
    assert not in_scope(run, "a/a3")
    assert in_scope(run, "a/a1")

    # After the other filters: --case picks a2..a4, then the first two of those run.
    out2 = tmp_path / "out2"
    ran = run_cli(
        capsys,
        "run",
        "--provider",
        "echo",
        "--cases",
        str(cases),
        "--case",
        "a/a[234]",
        "--limit",
        "2",
        "--out",
        str(out2),
        "--no-progress",
    )
    assert ran.code == 0, ran.out + ran.err
    assert [c.key for c in read_run(out2 / "results.json").cases] == ["a/a2", "a/a3"]


def test_limit_must_be_positive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ran = run_cli(capsys, "run", "--provider", "echo", "--limit", "0")
    assert ran.code == 2
