"""The `similar` assertion: cosine similarity of the answer (or a JSON field) to a reference
text against a threshold, with the run's embedding provider; without one it ends in `error`,
never a pass. Embeddings come from the scripted provider's deterministic fake."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalctl.assertions.kind import KIND, AssertInput, NoExpected
from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import CompletionResponse
from evalctl.config import Settings
from evalctl.embeddings import cosine
from evalctl.errors import ProviderError
from evalctl.fakes.embedder import fake_vector
from evalctl.plugin_loader import check_types
from evalctl.providers.scripted import Script, ScriptedProvider
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from evalctl.scoring.check import Transcript
from evalctl.scoring.declared import parse_assertion
from evalctl.scoring.verdict import attempt_verdict
from tests.scoring_helpers import score_all
from tests.semantic_support import CountingEmbedder

REFERENCE = "a bold red wine with dark berries for grilled steak"
CLOSE = "A bold red with dark berries, great for grilled steak."
FAR = "The train to Paris leaves at noon from platform four."


def check(table: dict[str, Any], answer: str, **services: Any) -> Any:
    spec, problems = parse_assertion(table, check_types(), [])
    assert spec is not None, problems
    case = Case(
        suite="s", id="c", description="", features=[], input=AssertInput(prompt="?"),
        expected=NoExpected(), checks=[], timeout_s=None, assertions=[spec],
    )  # fmt: skip
    transcript = Transcript([], [CompletionResponse(content=answer)], [])
    (result,) = score_all(KIND, case, transcript, suite=SuiteTable(name="s", kind="assert"),
                          **services)  # fmt: skip
    return result


FAKE = ScriptedProvider(Script())


def test_a_close_answer_passes_with_its_similarity_shown() -> None:
    result = check({"type": "similar", "value": REFERENCE, "threshold": 0.5}, CLOSE, embedder=FAKE)
    assert result.status == "pass" and result.name == "similar"
    assert result.actual == pytest.approx(cosine(fake_vector(CLOSE), fake_vector(REFERENCE)), 1e-3)
    assert result.actual >= 0.5
    assert result.expected == {"similar_to": REFERENCE, "threshold": 0.5}


def test_an_unrelated_answer_fails_saying_how_far_it_was() -> None:
    result = check({"type": "similar", "value": REFERENCE, "threshold": 0.5}, FAR, embedder=FAKE)
    assert result.status == "fail"
    assert result.actual < 0.5
    assert f"similarity {result.actual} is below 0.5" in result.message


def test_the_threshold_defaults_to_0_8() -> None:
    result = check({"type": "similar", "value": REFERENCE}, CLOSE, embedder=FAKE)
    assert result.expected["threshold"] == 0.8
    assert result.status == ("pass" if result.actual >= 0.8 else "fail")


def test_a_json_field_is_compared_instead_of_the_whole_answer() -> None:
    answer = json.dumps({"pick": CLOSE, "price": 18})
    table = {"type": "similar", "value": REFERENCE, "threshold": 0.5, "field": "pick"}
    result = check(table, answer, embedder=FAKE)
    assert result.status == "pass" and result.name == "similar:pick"
    assert result.expected["field"] == "pick"
    assert result.actual == pytest.approx(cosine(fake_vector(CLOSE), fake_vector(REFERENCE)), 1e-3)
    missing = check({**table, "field": "wine.name"}, answer, embedder=FAKE)
    assert missing.status == "fail" and "no field at path 'wine.name'" in missing.message
    prose = check(table, "no JSON here", embedder=FAKE)
    assert prose.status == "fail" and "no JSON" in prose.message


def test_without_an_embedder_the_check_is_an_error_not_a_pass() -> None:
    result = check({"type": "similar", "value": REFERENCE, "threshold": -1}, CLOSE)
    assert result.status == "error"
    assert "no embedding provider" in result.message
    assert attempt_verdict([result], 1.0).status == "error"


def test_a_failing_embedder_is_an_error() -> None:
    class Broken(CountingEmbedder):
        def embed(self, texts: Any, *, timeout: float) -> Any:
            raise ProviderError("the daemon is gone")

    result = check({"type": "similar", "value": REFERENCE}, CLOSE, embedder=Broken())
    assert result.status == "error" and "the daemon is gone" in result.message


def test_an_empty_answer_fails_without_embedding() -> None:
    counting = CountingEmbedder()
    result = check({"type": "similar", "value": REFERENCE}, "   ", embedder=counting)
    assert result.status == "fail" and "empty" in result.message
    assert counting.texts == []


@pytest.mark.parametrize(
    ("table", "problem"),
    [
        ({"type": "similar", "threshold": 0.5}, "value"),
        ({"type": "similar", "value": ""}, "value"),
        ({"type": "similar", "value": "x", "threshold": 1.5}, "threshold"),
        ({"type": "similar", "value": "x", "treshold": 0.5}, "treshold"),
    ],
)
def test_parameters_are_checked(table: dict[str, Any], problem: str) -> None:
    spec, problems = parse_assertion(table, check_types(), [])
    assert spec is None
    assert any(problem in " ".join(p) for p in problems), problems


SUITE = """
[suite]
name = "pitch"
kind = "assert"
requires = ["embeddings"]

[[case]]
id = "steak"
input = { prompt = "Recommend a wine for steak." }
[[case.assert]]
type = "similar"
value = "a bold red wine with dark berries for grilled steak"
threshold = 0.5

[[case]]
id = "strict"
input = { prompt = "Recommend a wine for steak." }
[[case.assert]]
type = "similar"
value = "a bold red wine with dark berries for grilled steak"
threshold = 0.99
"""


def test_a_run_scores_similar_with_the_run_s_provider(tmp_path: Path, evalctl_home: Path) -> None:
    suite = tmp_path / "pitch.toml"
    suite.write_text(SUITE)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"default": [{"content": CLOSE}]}))
    outcome = execute_run(
        RunRequest(
            provider="scripted", script=script, paths=[suite], out_dir=tmp_path / "out",
            show_progress=False,
        ),
        Settings(home=evalctl_home),
        {},
    )  # fmt: skip
    cases = {c.id: c for c in outcome.result.cases}
    assert cases["steak"].status == "pass"
    assert cases["strict"].status == "fail"
    (similar,) = cases["strict"].checks
    assert similar.actual == pytest.approx(cosine(fake_vector(CLOSE), fake_vector(REFERENCE)), 1e-3)
