"""`kind = "retrieval"` (issue 24 item 3): cases call a declared tool directly, no model, and
min-score, ordered, distinct-from and contains-row judge the scored rows it returns. The
design's three checks of semantic search each fail on a planted broken tool: relevance on
constant low scores, ordering on reversed order, differentiation on the same rows for every
query."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from evalctl.cases.loader import load_suite
from evalctl.errors import BadInputError
from tests.cli_helpers import evalctl, run_cli
from tests.conftest import REPO

QUERIES = ("berry notes", "mineral white")

# A good search tool: each query its own rows, sorted by falling similarity, all relevant.
GOOD: dict[str, Any] = {
    "berry notes": {
        "wines": [
            {"id": "pinot-noir", "similarity": 0.81},
            {"id": "grenache", "similarity": 0.74},
            {"id": "zinfandel", "similarity": 0.74},
            {"id": "merlot", "similarity": 0.52},
        ]
    },
    "mineral white": {
        "wines": [
            {"id": "chablis", "similarity": 0.88},
            {"id": "muscadet", "similarity": 0.71},
            {"id": "riesling", "similarity": 0.64},
            {"id": "merlot", "similarity": 0.31},
        ]
    },
}


def constant_scores(good: dict[str, Any]) -> dict[str, Any]:
    """Every row scores the same low 0.1: the embedding is broken, the ranking meaningless."""
    return {
        q: {"wines": [{**row, "similarity": 0.1} for row in v["wines"]]} for q, v in good.items()
    }


def reversed_order(good: dict[str, Any]) -> dict[str, Any]:
    """The right rows, sorted the wrong way round."""
    return {q: {"wines": list(reversed(v["wines"]))} for q, v in good.items()}


def same_rows(good: dict[str, Any]) -> dict[str, Any]:
    """The first query's rows for every query: the query is ignored."""
    first = good[QUERIES[0]]
    return dict.fromkeys(good, first)


SUITE = """\
[suite]
name = "wine-search"
kind = "retrieval"
tools = ["semantic_search"]

[[suite.tool]]
name = "semantic_search"
description = "Wines whose notes mean what the query means"
fixture = "fixtures/search.json"
key = "query"
[suite.tool.parameters]
type = "object"
required = ["query"]
properties.query = { type = "string", minLength = 1 }
properties.limit = { type = "integer", minimum = 1 }

[[case]]
id = "berry-notes"
input = { tool = "semantic_search", args = { query = "berry notes" } }
[[case.assert]]
type = "min-score"
threshold = 0.25
score_field = "similarity"
[[case.assert]]
type = "ordered"
score_field = "similarity"
[[case.assert]]
type = "distinct-from"
case = "mineral-white"
k = 3
[[case.assert]]
type = "contains-row"
id = "pinot-noir"
k = 3

[[case]]
id = "mineral-white"
input = { tool = "semantic_search", args = { query = "mineral white" } }
[[case.assert]]
type = "min-score"
threshold = 0.25
score_field = "similarity"
[[case.assert]]
type = "ordered"
score_field = "similarity"
[[case.assert]]
type = "distinct-from"
case = "berry-notes"
k = 3
m = 2
[[case.assert]]
type = "contains-row"
ids = ["chablis", "muscadet"]
k = 3
"""


def write_suite(root: Path, rows: dict[str, Any], suite: str = SUITE) -> Path:
    (root / "fixtures").mkdir(parents=True, exist_ok=True)
    (root / "fixtures" / "search.json").write_text(json.dumps(rows))
    path = root / "wine-search.toml"
    path.write_text(suite)
    return path


def run_suite(
    capsys: pytest.CaptureFixture[str], path: Path, out: Path, *more: str
) -> dict[str, dict[str, Any]]:
    """Run with the scripted provider and no script: a retrieval suite asks no model."""
    ran = run_cli(
        capsys, "run", "--provider", "scripted", "--cases", str(path), "--out", str(out),
        "--no-progress", *more,
    )  # fmt: skip
    assert ran.code in (0, 1), ran.err
    results = json.loads((out / "results.json").read_text())
    return {case["id"]: case for case in results["cases"]}


def checks_of(case: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {check["name"]: check for check in case["checks"]}


def test_a_good_tool_passes_every_assertion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = run_suite(capsys, write_suite(tmp_path, GOOD), tmp_path / "out")
    for case in cases.values():
        assert case["status"] == "pass", case["checks"]
    checks = checks_of(cases["berry-notes"])
    assert list(checks) == [
        "min-score",
        "ordered",
        "distinct-from:mineral-white",
        "contains-row:pinot-noir",
    ]
    assert checks["min-score"]["actual"] == [0.81, 0.74, 0.74, 0.52]
    assert checks["distinct-from:mineral-white"]["actual"] == {
        "top_k": ["pinot-noir", "grenache", "zinfandel"],
        "other_top_k": ["chablis", "muscadet", "riesling"],
        "different": 3,
    }


def test_the_results_record_the_call_and_the_other_case_s_call_made_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = run_suite(capsys, write_suite(tmp_path, GOOD), tmp_path / "out")
    case = cases["berry-notes"]
    own, other = case["tool_calls"]
    assert (own["name"], own["arguments"], own["is_error"]) == (
        "semantic_search",
        {"query": "berry notes"},
        False,
    )
    assert own["data"]["value"] == GOOD["berry notes"]
    assert own["duration_ms"] >= 0
    assert other["arguments"] == {"query": "mineral white"}
    # No model was asked: no turns, no tokens; the answer is the tool's result.
    assert case["turns"] == 0
    assert case["transcript"] == []
    assert case["usage"]["input_tokens"] == 0
    assert json.loads(case["output"]) == GOOD["berry notes"]


def test_answer_assertions_read_the_tool_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = SUITE.replace(
        'type = "contains-row"\nid = "pinot-noir"\nk = 3\n',
        'type = "contains-row"\nid = "pinot-noir"\nk = 3\n'
        '[[case.assert]]\ntype = "json-field"\npath = "wines.0.id"\nequals = "merlot"\n',
    )
    cases = run_suite(capsys, write_suite(tmp_path, GOOD, suite), tmp_path / "out")
    check = checks_of(cases["berry-notes"])["json-field:wines.0.id"]
    assert (check["status"], check["actual"]) == ("fail", "pinot-noir")


def test_relevance_fails_on_constant_low_scores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = run_suite(capsys, write_suite(tmp_path, constant_scores(GOOD)), tmp_path / "out")
    check = checks_of(cases["berry-notes"])["min-score"]
    assert check["status"] == "fail"
    assert check["message"] == "row 1 (id='pinot-noir') scored 0.1, below 0.25"
    assert cases["berry-notes"]["status"] == "fail"


def test_ordering_fails_on_reversed_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = run_suite(capsys, write_suite(tmp_path, reversed_order(GOOD)), tmp_path / "out")
    check = checks_of(cases["berry-notes"])["ordered"]
    assert check["status"] == "fail"
    assert check["message"] == (
        "row 1 (id='merlot') scored 0.52 but ranks above row 2 (id='zinfandel'), which scored 0.74"
    )
    # Relevance alone cannot see it: every row is still above the threshold.
    assert checks_of(cases["berry-notes"])["min-score"]["status"] == "pass"


def test_differentiation_fails_on_the_same_rows_for_every_query(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = run_suite(capsys, write_suite(tmp_path, same_rows(GOOD)), tmp_path / "out")
    check = checks_of(cases["berry-notes"])["distinct-from:mineral-white"]
    assert check["status"] == "fail"
    assert check["actual"]["different"] == 0
    assert "fewer than 1" in check["message"]
    # Relevance and ordering cannot see it: the rows are good rows, well sorted.
    assert checks_of(cases["berry-notes"])["min-score"]["status"] == "pass"
    assert checks_of(cases["berry-notes"])["ordered"]["status"] == "pass"
    # And recall does: mineral-white's labelled wines are not in its top 3.
    recall = checks_of(cases["mineral-white"])["contains-row:chablis,muscadet"]
    assert recall["status"] == "fail"
    assert recall["actual"]["recall"] == 0
    assert "['pinot-noir', 'grenache', 'zinfandel']" in recall["message"]


def test_distinct_from_holds_when_a_case_filter_leaves_the_other_case_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_suite(tmp_path, GOOD)
    cases = run_suite(capsys, path, tmp_path / "out", "--case", "berry-notes")
    assert list(cases) == ["berry-notes"]
    check = checks_of(cases["berry-notes"])["distinct-from:mineral-white"]
    assert check["status"] == "pass"
    assert check["actual"]["other_top_k"] == ["chablis", "muscadet", "riesling"]


def test_min_score_on_the_top_k_only_and_no_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = {
        "berry notes": {"wines": [{"id": "a", "similarity": 0.9}, {"id": "b", "similarity": 0.2}]},
        "mineral white": {"wines": []},
    }
    suite = SUITE.replace(
        'type = "min-score"\nthreshold = 0.25\n', 'type = "min-score"\nthreshold = 0.25\nk = 1\n'
    )
    cases = run_suite(capsys, write_suite(tmp_path, rows, suite), tmp_path / "out")
    assert checks_of(cases["berry-notes"])["min-score"]["status"] == "pass"
    empty = checks_of(cases["mineral-white"])["min-score"]
    assert (empty["status"], empty["message"]) == ("fail", "no results")


def test_rows_that_are_not_scored_rows_fail_saying_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rows = {
        "berry notes": {"wines": [{"id": "a", "score": 0.9}], "also": []},
        "mineral white": [{"id": "a", "similarity": "high"}],
    }
    cases = run_suite(capsys, write_suite(tmp_path, rows), tmp_path / "out")
    two_lists = checks_of(cases["berry-notes"])["min-score"]
    assert two_lists["status"] == "fail"
    assert (
        "exactly one field holding a list of rows (list fields: wines, also)"
        in (two_lists["message"])
    )
    not_a_number = checks_of(cases["mineral-white"])["ordered"]
    assert not_a_number["message"] == "row 1's 'similarity' is 'high', not a number"


def test_a_failed_call_fails_every_assertion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The fixture has no entry for "mineral white": the tool fails, as a tool would.
    rows = {"berry notes": GOOD["berry notes"]}
    cases = run_suite(capsys, write_suite(tmp_path, rows), tmp_path / "out")
    case = cases["mineral-white"]
    assert case["status"] == "fail"
    assert case["tool_calls"][0]["is_error"] is True
    assert all(c["status"] == "fail" for c in case["checks"])
    assert "the call of 'semantic_search' failed" in checks_of(case)["min-score"]["message"]


@pytest.mark.parametrize(("min_recall", "status"), [("", "fail"), ("min_recall = 0.5", "pass")])
def test_contains_row_counts_recall_at_k(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], min_recall: str, status: str
) -> None:
    suite = SUITE.replace(
        'ids = ["chablis", "muscadet"]', f'ids = ["chablis", "barolo"]\n{min_recall}'
    )
    cases = run_suite(capsys, write_suite(tmp_path, GOOD, suite), tmp_path / "out")
    check = checks_of(cases["mineral-white"])["contains-row:chablis,barolo"]
    assert check["status"] == status
    assert check["actual"] == {
        "top_k": ["chablis", "muscadet", "riesling"],
        "missing": ["barolo"],
        "recall": 0.5,
    }
    if status == "fail":
        assert check["message"] == (
            "'barolo' not in the top 3: ['chablis', 'muscadet', 'riesling'] "
            "(recall 0.50, at least 1 needed)"
        )


def _load_error(tmp_path: Path, suite: str) -> BadInputError:
    path = write_suite(tmp_path, GOOD, suite)
    with pytest.raises(BadInputError) as caught:
        load_suite(path)
    return caught.value


def test_distinct_from_an_unknown_case_is_a_validation_error(tmp_path: Path) -> None:
    error = _load_error(tmp_path, SUITE.replace('case = "mineral-white"', 'case = "mineral"'))
    assert error.file == str(tmp_path / "wine-search.toml")
    assert (error.case_id, error.field) == ("berry-notes", "case.assert[3].case")
    assert "'mineral' is not another case of this suite (others: mineral-white)" in error.message


def test_distinct_from_the_case_itself_is_a_validation_error(tmp_path: Path) -> None:
    error = _load_error(tmp_path, SUITE.replace('case = "mineral-white"', 'case = "berry-notes"'))
    assert (error.case_id, error.field) == ("berry-notes", "case.assert[3].case")


def test_a_tool_the_suite_does_not_offer_is_a_validation_error(tmp_path: Path) -> None:
    suite = SUITE.replace(
        'input = { tool = "semantic_search", args = { query = "berry notes" } }',
        'input = { tool = "keyword_search", args = { query = "berry notes" } }',
    )
    error = _load_error(tmp_path, suite)
    assert (error.case_id, error.field) == ("berry-notes", "case.input.tool")
    assert "'keyword_search' is not one of the suite's tools (semantic_search)" in error.message


def test_arguments_invalid_per_parameters_are_a_validation_error(tmp_path: Path) -> None:
    suite = SUITE.replace('args = { query = "berry notes" }', 'args = { query = "", limit = 0 }')
    error = _load_error(tmp_path, suite)
    assert (error.case_id, error.field) == ("berry-notes", "case.input.args")
    assert "invalid arguments for 'semantic_search'" in error.message
    assert "limit" in error.message


def test_an_unknown_input_key_is_a_validation_error(tmp_path: Path) -> None:
    suite = SUITE.replace('args = { query = "berry notes" }', 'arguments = { query = "x" }')
    error = _load_error(tmp_path, suite)
    assert error.case_id == "berry-notes"
    assert error.field is not None and error.field.startswith("case.input")


# ------------------------------------------------------------------ examples/retrieval

EXAMPLE = REPO / "examples" / "retrieval"


def test_the_example_validates_baselines_and_gates_a_planted_broken_tool(tmp_path: Path) -> None:
    checked = evalctl(tmp_path, "cases", "validate", str(EXAMPLE))
    assert checked.returncode == 0, checked.stderr
    assert "3 cases in 1 suite" in checked.stdout

    # The python tool, no model and no reply script; run from a copy outside the repository,
    # whose evalctl.toml (found from the suite's folder) would put the baseline in the repo.
    example = tmp_path / "example"
    shutil.copytree(EXAMPLE, example)
    made = evalctl(
        tmp_path, "baseline", "--provider", "scripted", "--cases", str(example), "--json"
    )
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["passed"] == 3
    results = json.loads((tmp_path / json.loads(made.stdout)["results_path"]).read_text())
    cases = {case["id"]: case for case in results["cases"]}
    # The suite's defaults reach every case; fruity-red's own min-score replaces the default.
    assert [c["name"] for c in cases["berry-notes"]["checks"]] == [
        "distinct-from:mineral-white",
        "contains-row:pinot-noir",
        "min-score",
        "ordered",
    ]
    fruity = checks_of(cases["fruity-red"])
    assert fruity["min-score"]["expected"] == {"threshold": 0.25, "k": 2}
    assert fruity["min-score"]["actual"] == [0.463, 0.338]

    # Planted: the same search sorting the wrong way round.
    broken = tmp_path / "broken"
    shutil.copytree(EXAMPLE, broken)
    tool = broken / "winesearch.py"
    source = tool.read_text()
    assert "key=lambda item: (-item[0], item[1])" in source
    tool.write_text(source.replace("(-item[0], item[1])", "(item[0], item[1])"))
    ran = evalctl(
        tmp_path, "run", "--provider", "scripted", "--cases", str(broken), "--out", "now",
        "--no-progress",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr  # a run reports; compare gates
    assert "0/3 passed" in ran.stdout
    gated = evalctl(
        tmp_path, "compare", "--gate", "strict", "baselines/scripted.json", "now/results.json"
    )
    assert gated.returncode == 1, gated.stderr
    assert "3 regressions" in gated.stdout
    assert "wine-search/berry-notes" in gated.stderr


def test_min_different_above_k_is_a_validation_error(tmp_path: Path) -> None:
    error = _load_error(tmp_path, SUITE.replace("k = 3\nm = 2", "k = 3\nm = 4"))
    assert (error.case_id, error.field) == ("mineral-white", "case.assert[3]")
    assert "min_different (4) cannot exceed k (3)" in error.message


def test_the_docs_walk_through_the_example_suite_as_it_is() -> None:
    doc = (REPO / "docs" / "writing-suites.md").read_text()
    start = doc.index("`examples/retrieval/wine-search.toml` tests a small")
    body = doc.index("\n", doc.index("```toml", start)) + 1
    shown = doc[body : doc.index("```", body)]
    assert shown == (EXAMPLE / "wine-search.toml").read_text()


def test_a_script_is_still_needed_when_another_suite_asks_a_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(tmp_path, GOOD)
    (tmp_path / "chat.toml").write_text(
        '[suite]\nname = "chat"\nkind = "assert"\n\n[[case]]\nid = "hi"\n'
        'input = { prompt = "Say hi." }\n[[case.assert]]\ntype = "icontains"\nvalue = "hi"\n'
    )
    ran = run_cli(
        capsys, "run", "--provider", "scripted", "--cases", str(tmp_path), "--out",
        str(tmp_path / "out"), "--no-progress",
    )  # fmt: skip
    assert ran.code == 2
    assert "the scripted provider needs --script FILE" in ran.err
