"""One reading of a final answer (evalctl.scoring.answer): whole, fenced, embedded, and the
same value for a suite kind, the JSON assertions and `output_schema`."""

from __future__ import annotations

import json

import pytest

from evalctl.assertions.json_checks import JsonField, JsonValid
from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import CompletionResponse
from evalctl.scoring.answer import read_answer
from evalctl.scoring.check import Transcript, scoring_context
from evalctl.scoring.score import OUTPUT_SCHEMA_CHECK, declared_results
from evalctl.suites.asset_triage.kind import KIND as TRIAGE
from tests.release_helpers import TRIAGE_SUITE, suite
from tests.scoring_helpers import score_kind

RIGHT = {"os": "darwin", "arch": "arm64", "format": "tar.gz", "kind": "artifact"}


@pytest.mark.parametrize(
    ("text", "value", "source"),
    [
        (' {"a": 1} ', {"a": 1}, "whole"),
        ("[1, 2]", [1, 2], "whole"),
        ('Here:\n```json\n{"a": 1}\n```\nDone.', {"a": 1}, "fenced"),
        ('```\n{"a": 1}\n```', {"a": 1}, "fenced"),
        ('The answer is {"a": {"b": 2}} as asked.', {"a": {"b": 2}}, "embedded"),
        ("Tags: [1, 2] and more", [1, 2], "embedded"),
        ('"just a string"', "just a string", "whole"),
    ],
)
def test_the_rule_reads_json_and_says_where_from(text: str, value: object, source: str) -> None:
    answer = read_answer(text)
    assert (answer.json, answer.json_from, answer.json_error) == (value, source, "")
    assert answer.text == text


def test_two_fenced_blocks_are_not_one_answer_but_prose_json_still_is() -> None:
    text = '```json\n{"a": 1}\n```\nor\n```json\n{"a": 2}\n```'
    # Neither block is *the* answer; the embedded span covers both and is no JSON.
    assert not read_answer(text).has_json


def test_no_json_says_why() -> None:
    assert read_answer("").json_error == "the answer is empty"
    broken = read_answer('{"a": ')
    assert not broken.has_json and broken.json is None
    assert broken.json_error == "not JSON: Expecting value at line 1 column 6"
    assert read_answer("no braces at all").json_error.startswith("not JSON")


def _case() -> Case:
    return next(c for c in suite(TRIAGE_SUITE).cases if c.id == "trivy-macos-arm64")


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps(RIGHT),
        "```json\n" + json.dumps(RIGHT) + "\n```",
        "Labels: " + json.dumps(RIGHT) + ".",
    ],
)
def test_a_kind_and_the_json_assertions_see_the_same_value(reply: str) -> None:
    case = _case()
    transcript = Transcript([], [CompletionResponse(content=reply)])
    assert all(c.passed for c in score_kind(TRIAGE, case, transcript))
    ctx = scoring_context(case, SuiteTable(name="t", kind="assert"), transcript)
    field = JsonField().evaluate(JsonField.params_model(path="os", equals="darwin"), ctx)
    assert field.passed, field
    schema = {"type": "object", "required": ["os"]}
    table = SuiteTable(name="t", kind="assert", output_schema=schema)
    schema_ctx = scoring_context(case.model_copy(update={"assertions": []}), table, transcript)
    (declared,) = declared_results(schema_ctx, lambda name: None)
    assert (declared.name, declared.status) == (OUTPUT_SCHEMA_CHECK, "pass")
    # json-valid alone asks for no prose around the JSON, unless told otherwise.
    strict = JsonValid().evaluate(JsonValid.params_model(), ctx)
    lenient = JsonValid().evaluate(JsonValid.params_model(strict=False), ctx)
    embedded = ctx.answer.json_from == "embedded"
    assert (strict.passed, lenient.passed) == (not embedded, True)
