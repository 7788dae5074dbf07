"""User regular expressions (`regex`, `json-field`'s `regex`) cannot hang a run: the engine
stops a runaway search and the check ends in `error`; `validate` refuses a pattern the engine
cannot compile, naming the file, the case and the field."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.assert_helpers import evalctl

# Scores one assertion against one answer, as the runner does, and prints the result.
SCORE = """\
import json, sys
from evalctl.assertions.kind import KIND, AssertInput, NoExpected
from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import CompletionResponse
from evalctl.plugin_loader import check_types
from evalctl.scoring.check import Transcript
from evalctl.scoring.declared import parse_assertion
from tests.scoring_helpers import score_all

table, answer = json.loads(sys.argv[1]), sys.argv[2]
spec, problems = parse_assertion(table, check_types(), [])
assert spec is not None, problems
case = Case(suite="s", id="c", description="", features=[], input=AssertInput(prompt="?"),
            expected=NoExpected(), checks=[], timeout_s=None, assertions=[spec])
transcript = Transcript([], [CompletionResponse(content=answer)], [])
(result,) = score_all(KIND, case, transcript, suite=SuiteTable(name="s", kind="assert"))
print(json.dumps({"status": result.status, "message": result.message}))
"""


def score(table: dict[str, object], answer: str) -> dict[str, str]:
    # A subprocess with a generous timeout: if the bound ever broke, this test fails instead
    # of hanging the suite (pytest has no timeout of its own here).
    done = subprocess.run(
        [sys.executable, "-c", SCORE, json.dumps(table), answer],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, str] = json.loads(done.stdout)
    return result


def test_the_issues_backtracking_pattern_finishes_with_a_verdict() -> None:
    answer = "a" * 40 + "!"
    assert score({"type": "regex", "pattern": "^(a+)+$"}, answer)["status"] == "fail"
    field = {"type": "json-field", "path": "v", "regex": "^(a+)+$"}
    assert score(field, json.dumps({"v": answer}))["status"] == "fail"
    assert score(field, json.dumps({"v": "aaaa"}))["status"] == "pass"


def test_a_search_that_runs_away_ends_the_check_in_error() -> None:
    # Exponential in any backtracking engine: this never finishes without the bound.
    pattern, answer = "^(a|aa)+$", "a" * 80 + "!"
    for table, text in (
        ({"type": "regex", "pattern": pattern}, answer),
        ({"type": "json-field", "path": "v", "regex": pattern}, json.dumps({"v": answer})),
    ):
        result = score(table, text)
        assert result["status"] == "error", result
        assert "did not finish" in result["message"]
        assert pattern in result["message"]


def test_a_schema_pattern_is_bounded_too() -> None:
    # `pattern` in `json-schema` (and `output_schema`) runs on the model's answer as well.
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": "^(a|aa)+$"}}}
    table = {"type": "json-schema", "schema": schema}
    slow = score(table, json.dumps({"v": "a" * 80 + "!"}))
    assert slow["status"] == "fail"
    assert "pattern '^(a|aa)+$' did not finish" in slow["message"]
    assert score(table, json.dumps({"v": "aaaa"}))["status"] == "pass"
    assert "does not match" in score(table, json.dumps({"v": "b"}))["message"]


def test_validate_names_the_field_of_a_pattern_the_engine_cannot_compile(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "s.toml"
    suite.write_text(
        textwrap.dedent(
            """\
            [suite]
            name = "s"
            kind = "assert"
            [[case]]
            id = "a"
            input = { prompt = "hi" }
            [[case.assert]]
            type = "json-field"
            path = "v"
            regex = "(?<bad"
            """
        )
    )
    checked = evalctl(tmp_path, "cases", "validate", str(suite))
    assert checked.returncode == 2, checked.stderr
    err = " ".join(checked.stderr.split())
    assert "s.toml" in err
    assert "case 'a': field 'case.assert[1].regex': invalid regular expression" in err
    assert "Traceback" not in checked.stderr
