"""The asset-triage kind: prompt, answer schema, and field-by-field scoring."""

from __future__ import annotations

import json
import re
import typing

import pytest

from evalctl.cases.schema import Case
from evalctl.chat import CompletionResponse
from evalctl.errors import BadInputError
from evalctl.scoring.check import Transcript
from evalctl.suites.asset_triage.kind import (
    ANSWER_SCHEMA,
    FIELDS,
    KIND,
    TriageExpected,
    TriageInput,
)
from tests.release_helpers import TRIAGE_SUITE, context, suite
from tests.scoring_helpers import score_kind


def triage_case(case_id: str) -> Case:
    return next(c for c in suite(TRIAGE_SUITE).cases if c.id == case_id)


def score(case_id: str, reply: str) -> dict[str, tuple[bool, object, object, str]]:
    case = triage_case(case_id)
    transcript = Transcript(messages=[], responses=[CompletionResponse(content=reply)])
    return {
        c.name: (c.passed, c.expected, c.actual, c.message)
        for c in score_kind(KIND, case, transcript)
    }


RIGHT = {"os": "darwin", "arch": "arm64", "format": "tar.gz", "kind": "artifact"}


def test_right_answer_passes_every_field() -> None:
    results = score("trivy-macos-arm64", json.dumps(RIGHT))
    assert list(results) == list(FIELDS)
    assert all(passed for passed, *_ in results.values())


def test_each_field_is_scored_on_its_own() -> None:
    answer = RIGHT | {"arch": "x86_64", "kind": "signature"}
    results = score("trivy-macos-arm64", json.dumps(answer))
    assert results["os"][0] and results["format"][0]
    assert results["arch"] == (False, "arm64", "x86_64", "expected 'arm64', got 'x86_64'")
    assert results["kind"][:3] == (False, "artifact", "signature")


def test_json_is_found_in_fences_and_prose_and_case_is_ignored() -> None:
    fenced = "Here you go:\n```json\n" + json.dumps(RIGHT | {"os": "Darwin "}) + "\n```"
    assert all(r[0] for r in score("trivy-macos-arm64", fenced).values())
    prose = "The labels are " + json.dumps(RIGHT) + " as requested."
    assert all(r[0] for r in score("trivy-macos-arm64", prose).values())


def test_unreadable_answers_fail_every_field_saying_why() -> None:
    results = score("trivy-macos-arm64", '{"os": "darwin", "arch": ')
    assert all(not passed and actual is None for passed, _, actual, _ in results.values())
    # The one reading of the answer (evalctl.scoring.answer) says why.
    assert results["os"][3] == "not JSON: Expecting value at line 1 column 25"
    assert score("trivy-macos-arm64", "")["kind"][3] == "the answer is empty"
    assert score("trivy-macos-arm64", "[1, 2]")["kind"][3] == "expected a JSON object, got list"


def test_a_missing_field_fails_only_that_field() -> None:
    answer = {k: v for k, v in RIGHT.items() if k != "format"}
    results = score("trivy-macos-arm64", json.dumps(answer))
    assert results["format"] == (False, "tar.gz", None, "field 'format' is missing")
    assert results["os"][0]


def test_schema_enums_match_the_expected_model() -> None:
    for field in FIELDS:
        annotation = TriageExpected.model_fields[field].annotation
        assert ANSWER_SCHEMA["properties"][field]["enum"] == list(typing.get_args(annotation))
    assert ANSWER_SCHEMA["required"] == list(FIELDS)
    assert ANSWER_SCHEMA["additionalProperties"] is False


def test_request_shape_asks_for_json_and_no_tools() -> None:
    case = triage_case("k3d-linux-amd64")
    shape = KIND.request_shape(suite(TRIAGE_SUITE).table, case)
    assert shape.json_schema == ANSWER_SCHEMA
    assert shape.tool_choice == "none" and shape.terminal_tool is None


def test_prompt_shows_the_asset_name() -> None:
    case = triage_case("k3d-linux-amd64")
    prompt = KIND.build_prompt(suite(TRIAGE_SUITE).table, case, context(case))
    assert prompt == "File: k3d-linux-amd64"


def test_an_asset_missing_from_its_fixture_is_a_suite_error() -> None:
    case = triage_case("k3d-linux-amd64").model_copy(
        update={"input": TriageInput(release="k3d", asset="k3d-plan9-amd64")}
    )
    with pytest.raises(BadInputError, match="not in release fixture 'k3d'"):
        KIND.build_prompt(suite(TRIAGE_SUITE).table, case, context(case))


# Spellings of each OS the prompt names ("os: linux; darwin (also macOS, macos, apple-darwin);
# windows; freebsd; none if not named").
_OS_WORDS = {"linux", "darwin", "macos", "apple", "windows", "freebsd"}
_BELONGS_TO = (".sig", ".pem", ".sha256", ".sbom.json")


def test_labels_follow_the_prompts_os_rule() -> None:
    """An asset whose name names no OS is labelled os = "none" (the prompt's own rule), except
    the files the prompt says are described by the file they belong to."""
    wrong = []
    for case in suite(TRIAGE_SUITE).cases:
        assert isinstance(case.input, TriageInput) and isinstance(case.expected, TriageExpected)
        name = case.input.asset
        if name.endswith(_BELONGS_TO):
            continue
        named = bool(_OS_WORDS & set(re.split(r"[^a-z0-9]+", name.lower())))
        if not named and case.expected.os != "none":
            wrong.append((case.id, case.expected.os))
    assert wrong == []


def test_an_attestation_is_labelled_as_itself() -> None:
    # The "file it belongs to" rule does not cover .intoto.jsonl: its format is its own.
    case = triage_case("tflint-intoto")
    assert isinstance(case.expected, TriageExpected)
    assert (case.expected.os, case.expected.format) == ("linux", "none")
