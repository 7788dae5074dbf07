"""Typed templates: a string that is one `{{ expression }}` and nothing else yields the
expression's value with its type (a number, a boolean, a list, a table), so a data-file row
can give a case its `args`, `threshold`, `min_items` or `messages`; mixed text stays text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalctl.cases.loader import load_suite
from evalctl.cases.template import render_value, single_expression
from evalctl.errors import BadInputError, ExitCode


@pytest.mark.parametrize(
    ("template", "value"),
    [
        ("{{ filters }}", {"color": "red", "max_price": 20}),
        ("  {{ filters }}  ", {"color": "red", "max_price": 20}),
        ("{{- n -}}", 3),
        ("{{ n }}", 3),
        ("{{ n * 2 }}", 6),
        ("{{ ratio }}", 0.5),
        ("{{ flag }}", True),
        ("{{ items }}", [1, "two", {"three": 3}]),
        ("{{ items | length }}", 3),
        ("{{ nothing }}", None),
        ("{{ n | string }}", "3"),
        ("{{ word }}", "hello"),
    ],
)
def test_one_expression_yields_its_value_with_its_type(template: str, value: Any) -> None:
    variables = {
        "filters": {"color": "red", "max_price": 20},
        "n": 3,
        "ratio": 0.5,
        "flag": True,
        "items": [1, "two", {"three": 3}],
        "nothing": None,
        "word": "hello",
    }
    rendered, problems = render_value(template, variables)
    assert problems == []
    assert rendered == value
    assert type(rendered) is type(value)


@pytest.mark.parametrize(
    ("template", "text"),
    [
        ("n = {{ n }}", "n = 3"),
        ("{{ n }}{{ n }}", "33"),
        ("{{ n }} and {{ flag }}", "3 and True"),
        ("{% if flag %}{{ n }}{% endif %}", "3"),
        ("  {{ word }}\n", "  hello\n"),  # a text value keeps the whitespace around it
    ],
)
def test_mixed_text_stays_text(template: str, text: str) -> None:
    rendered, problems = render_value(template, {"n": 3, "flag": True, "word": "hello"})
    assert problems == []
    assert rendered == text


def test_single_expression_is_exactly_one_placeholder() -> None:
    assert single_expression(" {{ a.b }} ") == "a.b"
    assert single_expression("{{ a }} {{ b }}") is None
    assert single_expression("x {{ a }}") is None
    assert single_expression("{{ }}") is None


def test_nested_values_are_typed_and_problems_located() -> None:
    rendered, problems = render_value(
        {"args": "{{ f }}", "list": ["{{ n }}", "{{ missing }}"]}, {"f": {"a": [1]}, "n": 2}
    )
    assert rendered == {"args": {"a": [1]}, "list": [2, "{{ missing }}"]}
    assert len(problems) == 1
    loc, message = problems[0]
    assert loc == ("list", 1)
    assert "'missing' is undefined" in message


def test_the_sandbox_still_holds_for_one_expression() -> None:
    _, problems = render_value("{{ n.__class__ }}", {"n": 1})
    assert problems and "not allowed in a template" in problems[0][1]
    _, problems = render_value('{{ "a" * 10000000 }}', {})
    assert problems and "repetition longer than" in problems[0][1]


GOLDEN = """\
[suite]
name = "golden"
kind = "assert"
tools = ["search_wines"]
cases_from = "golden.jsonl"

[[suite.tool]]
name = "search_wines"
description = "Search the catalog"
parameters.type = "object"
parameters.properties = { color = { type = "string" }, max_price = { type = "number" } }
mock = { wines = [] }

[suite.case_template]
threshold = "{{ __threshold }}"
seed = "{{ seed }}"
input = { messages = "{{ conversation }}" }
[[suite.case_template.assert]]
type = "tool-called"
name = "{{ expected_tool }}"
args = "{{ expected_filters }}"
weight = "{{ weight }}"
"""


def _row(**overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": "red-under-20",
        "__threshold": 0.5,
        "seed": 7,
        "conversation": [{"role": "user", "content": "A red under 20?"}],
        "expected_tool": "search_wines",
        "expected_filters": {"color": "red", "max_price": 20},
        "weight": 2,
    }
    row.update(overrides)
    return row


def _golden(tmp_path: Path, *rows: dict[str, Any]) -> Path:
    (tmp_path / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    suite = tmp_path / "golden.toml"
    suite.write_text(GOLDEN)
    return suite


def test_a_row_gives_args_threshold_seed_weight_and_messages(tmp_path: Path) -> None:
    case = load_suite(_golden(tmp_path, _row())).cases[0]
    assert case.threshold == 0.5
    assert case.seed == 7
    assert case.input.model_dump()["messages"] == [{"role": "user", "content": "A red under 20?"}]
    (spec,) = case.assertions
    assert spec.params.model_dump()["args"] == {"color": "red", "max_price": 20}
    assert spec.weight == 2.0


def test_a_row_value_of_the_wrong_type_is_exit_2_naming_case_and_field(tmp_path: Path) -> None:
    with pytest.raises(BadInputError) as info:
        load_suite(_golden(tmp_path, _row(expected_filters="red wines")))
    err = info.value
    assert err.code is ExitCode.BAD_INPUT
    assert err.case_id == "red-under-20"
    assert err.field is not None and err.field.endswith("assert[1].args")
    assert "golden.jsonl line 1" in err.message

    with pytest.raises(BadInputError) as info:
        load_suite(_golden(tmp_path, _row(__threshold=1.5)))
    assert (info.value.case_id, info.value.field) == ("red-under-20", "case.threshold")


def test_a_template_setting_that_is_not_a_placeholder_is_still_refused(tmp_path: Path) -> None:
    suite = _golden(tmp_path, _row())
    suite.write_text(GOLDEN.replace('"{{ __threshold }}"', '"high"'))
    with pytest.raises(BadInputError) as info:
        load_suite(suite)
    assert info.value.field == "suite.case_template.threshold"


def test_an_id_template_of_one_number_is_still_text(tmp_path: Path) -> None:
    (tmp_path / "rows.json").write_text('[{"n": 7, "q": "hi"}]')
    suite = tmp_path / "s.toml"
    suite.write_text(
        '[suite]\nname = "s"\nkind = "assert"\ncases_from = "rows.json"\n'
        'id_template = "{{ n }}"\n[suite.case_template]\ninput = { prompt = "{{ q }}" }\n'
        '[[suite.case_template.assert]]\ntype = "contains"\nvalue = "x"\n'
    )
    assert [c.id for c in load_suite(suite).cases] == ["7"]


def test_a_csv_cell_holding_json_becomes_data_through_fromjson(tmp_path: Path) -> None:
    (tmp_path / "golden.csv").write_text(
        'id,question,filters\nred,"A red?","{""color"": ""red"", ""max_price"": 20}"\n'
    )
    suite = tmp_path / "s.toml"
    suite.write_text(
        '[suite]\nname = "s"\nkind = "assert"\ntools = ["search"]\ncases_from = "golden.csv"\n'
        '[[suite.tool]]\nname = "search"\ndescription = "Search"\nmock = []\n'
        'parameters.properties = { color = { type = "string" }, max_price = { type = "number" } }\n'
        '[suite.case_template]\ninput = { prompt = "{{ question }}" }\n'
        '[[suite.case_template.assert]]\ntype = "tool-called"\nname = "search"\n'
        'args = "{{ filters | fromjson }}"\n'
    )
    (case,) = load_suite(suite).cases
    assert case.assertions[0].params.model_dump()["args"] == {"color": "red", "max_price": 20}
    rendered, problems = render_value("{{ x | fromjson }}", {"x": "{not json"})
    assert rendered == "{{ x | fromjson }}"
    assert problems and "fromjson: not JSON" in problems[0][1]
