"""The published JSON Schema of a suite file (schema/suite.schema.json, `evalctl schema`):
current with the models, true of every shipped suite, strict about unknown keys, and as
lenient as the loader where the loader reads leniently."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from evalctl.cases.loader import load_suite
from evalctl.cli.schema import COMMITTED, REFRESH, suite_schema_text
from tests.cli_helpers import run_cli
from tests.conftest import REPO


def _validator() -> Draft202012Validator:
    schema = json.loads((REPO / COMMITTED).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _problems(data: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
        for e in _validator().iter_errors(data)
    ]


def _shipped_suites() -> list[Path]:
    """Every TOML file shipped as a suite: the repository's cases/, the examples and the
    starter `evalctl init` writes (reply scripts and data files beside them are not suites)."""
    files = [
        *sorted((REPO / "cases").glob("*.toml")),
        *sorted((REPO / "examples").rglob("*.toml")),
        *sorted((REPO / "evalctl" / "cli" / "starter").glob("*.toml")),
    ]
    return [f for f in files if "suite" in tomllib.loads(f.read_text(encoding="utf-8"))]


def test_the_committed_schema_is_current() -> None:
    committed = REPO / COMMITTED
    assert committed.is_file(), f"{COMMITTED} is missing: run {REFRESH}"
    assert committed.read_text(encoding="utf-8") == suite_schema_text(), (
        f"{COMMITTED} is stale (the suite models changed): run {REFRESH} and commit it"
    )


def test_the_shipped_suites_are_found() -> None:
    names = {f.name for f in _shipped_suites()}
    assert {"sommelier.toml", "tickets.toml", "starter.toml", "wine-search.toml"} <= names


@pytest.mark.parametrize("path", _shipped_suites(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_shipped_suite_validates(path: Path) -> None:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert _problems(data) == []


MINIMAL: dict[str, Any] = {
    "suite": {"name": "s", "kind": "assert"},
    "case": [{"id": "c1", "input": {"prompt": "hi"}}],
}


def _with(where: str, key: str, value: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(MINIMAL))
    table = data if where == "top" else data["suite"] if where == "suite" else data["case"][0]
    table[key] = value
    return data


def test_a_minimal_suite_validates() -> None:
    assert _problems(MINIMAL) == []


@pytest.mark.parametrize(
    ("where", "key", "path"),
    [("top", "suites", "(top)"), ("suite", "nmae", "suite"), ("case", "expect", "case/0")],
)
def test_an_unknown_key_is_rejected(where: str, key: str, path: str) -> None:
    problems = _problems(_with(where, key, "x"))
    assert len(problems) == 1
    assert problems[0].startswith(f"{path}: ") and repr(key) in problems[0]


def test_a_wrong_type_and_a_missing_key_are_rejected() -> None:
    assert _problems(_with("suite", "max_turns", 0))
    assert _problems(_with("case", "threshold", 2))
    assert _problems({"case": MINIMAL["case"]})  # no [suite]
    assert _problems({"suite": {"name": "s"}})  # no kind


LENIENT = """
[suite]
name = "lenient"
kind = "assert"
target = { type = "command", argv = ["true"] }
id_template = "row-{{ n }}"

[[suite.tools]]
name = "lookup"
description = "Look a thing up."
fixture = "lookup.json"
key = "q"
parameters = { type = "object", properties = { q = { type = "string" } } }

[suite.case_template]
threshold = "{{ t }}"
input = { prompt = "{{ q }}" }
assert = [{ type = "contains", value = "x" }]

[[case]]
id = "a"
vars = { q = "why", t = 0.5 }

[[case]]
id = 7
description = 3
metadata = { priority = 1, urgent = true }
input = { prompt = "hi" }
seed = "{{ 3 }}"
assert = [{ type = "contains", value = "x" }]
"""


def test_what_the_loader_reads_leniently_is_not_refused() -> None:
    # `[[suite.tools]]` tables, one `target` table, placeholders in the template and in an
    # inline case, numbers where a case has text, a case whose input the template fills.
    assert _problems(tomllib.loads(LENIENT)) == []


def test_the_loader_reads_the_lenient_example(tmp_path: Path) -> None:
    (tmp_path / "lenient.toml").write_text(LENIENT, encoding="utf-8")
    (tmp_path / "lookup.json").write_text("{}", encoding="utf-8")
    suite = load_suite(tmp_path / "lenient.toml")
    first, second = suite.cases
    assert (first.threshold, first.input.model_dump()["prompt"]) == (0.5, "why")
    assert (second.id, second.description, second.seed) == ("7", "3", 3)
    assert second.metadata == {"priority": "1", "urgent": "true"}


def test_the_command_prints_and_writes_the_schema(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    printed = run_cli(capsys, "schema")
    assert printed.code == 0, printed.err
    assert printed.out == suite_schema_text()
    out = tmp_path / "deep" / "suite.schema.json"
    written = run_cli(capsys, "schema", "--out", str(out), "--json")
    assert written.code == 0, written.err
    assert json.loads(written.out)["out"] == str(out)
    assert out.read_text(encoding="utf-8") == suite_schema_text()


def test_an_unwritable_out_is_bad_input(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x", encoding="utf-8")
    result = run_cli(capsys, "schema", "--out", str(blocker / "suite.schema.json"))
    assert result.code == 2
    assert "cannot create its folder" in result.err
