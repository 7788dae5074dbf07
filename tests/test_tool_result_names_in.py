"""`tool-result` (what a tool returned: `min_items`, `equals`, `contains` at a path) and
`names-in` (every name the answer mentions is a known one: a real SQLite catalog, a JSON list,
or what a tool returned), scored on recorded calls and loaded from real suite files."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from evalctl.assertions.kind import KIND, AssertInput, NoExpected
from evalctl.assertions.names_in import clean_name, names_in
from evalctl.cases.loader import load_suite
from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import CompletionResponse
from evalctl.errors import BadInputError, ExitCode
from evalctl.plugin_loader import check_types
from evalctl.results.models import CheckResult, ToolCallRecord
from evalctl.scoring.check import Transcript
from evalctl.scoring.declared import parse_assertion
from tests.scoring_helpers import score_all


def _call(value: Any, *, name: str = "search_wines", error: bool = False) -> ToolCallRecord:
    if error:
        return ToolCallRecord(
            turn=1, name=name, arguments={}, result="error: boom", is_error=True, duration_ms=1
        )
    return ToolCallRecord(
        turn=1,
        name=name,
        arguments={"color": "red"},
        result=json.dumps(value),
        data={"value": value},
        duration_ms=1.0,
    )


def check(
    table: dict[str, Any], answer: str, calls: list[ToolCallRecord], suite_dir: Path | None = None
) -> CheckResult:
    spec, problems = parse_assertion(table, check_types(), ["search_wines"], suite_dir=suite_dir)
    assert spec is not None, problems
    case = Case(
        suite="s",
        id="c",
        description="",
        features=[],
        input=AssertInput(prompt="?"),
        expected=NoExpected(),
        checks=[],
        timeout_s=None,
        assertions=[spec],
    )
    transcript = Transcript([], [CompletionResponse(content=answer)], calls)
    (result,) = score_all(KIND, case, transcript, suite=SuiteTable(name="s", kind="assert"))
    return result


THREE = {"wines": [{"name": "Malbec"}, {"name": "Rioja"}, {"name": "Barolo"}], "total": 3}
ONE = {"wines": [{"name": "Malbec"}], "total": 1}


def test_min_items_passes_when_some_call_returned_enough() -> None:
    table = {"type": "tool-result", "name": "search_wines", "path": "wines", "min_items": 2}
    passed = check(table, "", [_call(ONE), _call(THREE)])
    assert passed.status == "pass", passed
    assert passed.name == "tool-result:search_wines.wines"
    failed = check(table, "", [_call(ONE), _call(None, error=True)])
    assert failed.status == "fail"
    # What each call returned, call by call.
    assert "call 1 returned 1 item(s) at 'wines', fewer than 2" in failed.message
    assert "call 2 returned an error (error: boom)" in failed.message
    never = check(table, "", [])
    assert never.status == "fail"
    assert "was not called" in never.message


@pytest.mark.parametrize(
    ("table", "good", "bad"),
    [
        ({"path": "total", "equals": 3}, THREE, ONE),
        ({"path": "wines.0.name", "equals": "Malbec"}, ONE, THREE | {"wines": [{"name": "X"}]}),
        ({"path": "wines", "contains": {"name": "Rioja"}}, THREE, ONE),
        ({"path": "wines.1.name", "contains": "ioj"}, THREE, ONE),
        ({"min_items": 1}, ["a"], []),
        ({"path": "wines", "min_items": 1}, ONE, {"wines": "none"}),
        ({"path": "total"}, ONE, {"wines": []}),
    ],
)
def test_equals_contains_and_a_bare_path(table: dict[str, Any], good: Any, bad: Any) -> None:
    table = {"type": "tool-result", "name": "search_wines", **table}
    assert check(table, "", [_call(good)]).status == "pass"
    failed = check(table, "", [_call(bad)])
    assert failed.status == "fail"
    assert failed.message.startswith("'search_wines' was called 1 time(s), none satisfying")


def test_tool_result_parameters_are_validated() -> None:
    for table, field in [
        ({"name": "search_wines", "min_items": -1}, ".min_items"),
        ({"name": "search_wines", "min_item": 1}, ".min_item"),
        ({"name": "nope", "min_items": 1}, ".name"),
        ({"min_items": 1}, ".name"),
    ]:
        spec, problems = parse_assertion(
            {"type": "tool-result", **table}, check_types(), ["search_wines"]
        )
        assert spec is None
        assert [f for f, _ in problems] == [field], problems


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    """A real SQLite catalog beside the suite file."""
    path = tmp_path / "data" / "wines.db"
    path.parent.mkdir()
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE wines (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        db.executemany(
            "INSERT INTO wines (name) VALUES (?)",
            [("Château Margaux",), ("Cloudy Bay Sauvignon Blanc",), ("Barolo Riserva",)],
        )
    db.close()
    return path


PATTERN = r"\[WINE:\d+\]\s*\n([^\n]+)"
REAL = (
    "[WINE:1]\n**Château Margaux 2015**\nA classic.\n\n[WINE:2]\n  _cloudy bay sauvignon blanc_\n"
)
INVENTED = REAL + "[WINE:3]\n**Domaine Imaginaire**\nNot real.\n"


def test_names_in_a_sqlite_catalog_relative_to_the_suite(catalog: Path, tmp_path: Path) -> None:
    table = {
        "type": "names-in",
        "pattern": PATTERN,
        "names_from": {"sqlite": "data/wines.db", "query": "SELECT name FROM wines"},
    }
    passed = check(table, REAL, [], suite_dir=tmp_path)
    assert passed.status == "pass", passed
    assert passed.actual == {
        "names": ["Château Margaux 2015", "cloudy bay sauvignon blanc"],
        "unknown": [],
    }
    failed = check(table, INVENTED, [], suite_dir=tmp_path)
    assert failed.status == "fail"
    assert "'Domaine Imaginaire'" in failed.message
    assert "Margaux" not in failed.message
    none = check(table, "I have no wine for you.", [], suite_dir=tmp_path)
    assert none.status == "n/a"


def test_names_in_a_json_file_and_in_what_a_tool_returned(tmp_path: Path) -> None:
    (tmp_path / "names.json").write_text(json.dumps(["château margaux", "Cloudy Bay"]))
    from_file = {"type": "names-in", "pattern": PATTERN, "names_from": {"file": "names.json"}}
    assert check(from_file, REAL, [], suite_dir=tmp_path).status == "pass"
    assert check(from_file, INVENTED, [], suite_dir=tmp_path).status == "fail"

    from_tool = {
        "type": "names-in",
        "pattern": PATTERN,
        "names_from": {"tool": "search_wines", "path": "wines.name"},
    }
    found = {"wines": [{"name": "Château Margaux"}, {"name": "Cloudy Bay Sauvignon Blanc"}]}
    assert check(from_tool, REAL, [_call(found)]).status == "pass"
    # Only what this case's calls returned is known.
    failed = check(from_tool, REAL, [_call({"wines": [{"name": "Château Margaux"}]})])
    assert failed.status == "fail"
    assert "'cloudy bay sauvignon blanc'" in failed.message


def test_a_broken_catalog_at_run_time_is_error_not_fail(catalog: Path, tmp_path: Path) -> None:
    table = {
        "type": "names-in",
        "pattern": PATTERN,
        "names_from": {"sqlite": "data/wines.db", "query": "SELECT nom FROM wines"},
    }
    result = check(table, REAL, [], suite_dir=tmp_path)
    assert result.status == "error"
    assert "no such column: nom" in result.message


def test_names_are_cleaned_of_markdown_emphasis() -> None:
    assert clean_name("  **Barolo**  ") == "Barolo"
    assert clean_name("__Rioja__") == "Rioja"
    assert clean_name("`Malbec` *2019*") == "Malbec 2019"
    assert names_in(r"- (\w+)", "- a\n- b\n- a") == ["a", "b"]


SUITE = """\
[suite]
name = "wines"
kind = "assert"
tools = ["search_wines"]

[[suite.tool]]
name = "search_wines"
description = "Search"
mock = { wines = [] }

[[case]]
id = "c1"
input = { prompt = "?" }
[[case.assert]]
type = "names-in"
pattern = 'PATTERN'
names_from = NAMES_FROM
"""


def _suite_text(pattern: str, names_from: str) -> str:
    return SUITE.replace("PATTERN", pattern).replace("NAMES_FROM", names_from)


@pytest.mark.parametrize(
    ("pattern", "names_from", "field", "needle"),
    [
        (PATTERN, '{ sqlite = "missing.db", query = "SELECT 1" }', "names_from.sqlite",
         "file not found: missing.db"),
        (PATTERN, '{ file = "nope.json" }', "names_from.file", "file not found"),
        (PATTERN, '{ table = "wines" }', "names_from.table", "unknown key"),
        (PATTERN, "{ }", "names_from", "give one of"),
        (PATTERN, '{ sqlite = "data/wines.db" }', "names_from", "query goes with sqlite"),
        (PATTERN, '{ file = "names.json", tool = "search_wines" }', "names_from", "found: file"),
        (PATTERN, '{ tool = "nope" }', "names_from.tool", "unknown tool 'nope'"),
        (r"\[WINE\]", '{ file = "names.json" }', "pattern", "needs a group"),
        (r"(unclosed", '{ file = "names.json" }', "pattern", "invalid regular expression"),
    ],
)  # fmt: skip
def test_names_in_problems_are_exit_2_naming_file_case_and_field(
    catalog: Path, tmp_path: Path, pattern: str, names_from: str, field: str, needle: str
) -> None:
    (tmp_path / "names.json").write_text("[]")
    suite = tmp_path / "wines.toml"
    suite.write_text(_suite_text(pattern, names_from))
    with pytest.raises(BadInputError) as info:
        load_suite(suite)
    err = info.value
    assert err.code is ExitCode.BAD_INPUT
    assert err.file == str(suite)
    assert err.case_id == "c1"
    assert err.field == f"case.assert[1].{field}", err.message
    assert needle in err.message


def test_a_suite_resolves_the_catalog_from_its_own_folder(
    catalog: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = tmp_path / "wines.toml"
    suite.write_text(
        _suite_text(PATTERN, '{ sqlite = "data/wines.db", query = "SELECT name FROM wines" }')
    )
    monkeypatch.chdir("/")
    (case,) = load_suite(suite).cases
    assert case.assertions[0].params.model_dump()["names_from"]["sqlite"] == str(catalog)
