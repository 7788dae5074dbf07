"""The shipped sommelier-retrieval suite: it validates, runs with no model and no script on the
scripted provider's fake embeddings, and each of R6's three checks fails on a planted broken
tool (constant scores, reversed order, the same rows for every query) that stands in for
semantic_search through a `[[suite.tool]]` declaration in a copy of the suite."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from evalctl.cases.loader import load_suite
from evalctl.config import Settings
from evalctl.results.models import RunResult
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from tests.catalog_support import CASES_DIR

SUITE = CASES_DIR / "sommelier-retrieval.toml"
R6 = ("relevance", "ordering", "differentiation")

# Rows look like semantic_search's: {"wines": [{"name", "similarity", ...}]}. Which wines a
# query gets depends on the query (a hash), so only the planted fault breaks a check.
BROKEN_TOOLS = '''
import hashlib
import json

NAMES = [w["name"] for w in json.load(open(CATALOG, encoding="utf-8"))]


def _picked(query, limit):
    key = lambda name: hashlib.sha256((query + name).encode()).hexdigest()
    return sorted(NAMES, key=key)[:limit]


def _rows(names, scores):
    return {"wines": [{"name": n, "similarity": s} for n, s in zip(names, scores)]}


def _falling(limit):
    return [round(0.9 - 0.1 * i, 2) for i in range(limit)]


def constant(query, limit=5):
    """Every wine scores the same 0.0, as a zero embedding gives: no relevance at all."""
    return _rows(_picked(query, limit), [0.0] * limit)


def reversed_order(query, limit=5):
    """Right scores, worst first."""
    return _rows(_picked(query, limit), _falling(limit)[::-1])


def same_rows(query, limit=5):
    """The same wines whatever the query."""
    return _rows(_picked("", limit), _falling(limit))
'''


def planted(tmp_path: Path, function: str) -> Path:
    """A copy of the shipped suite whose semantic_search is `broken_tools:<function>`."""
    (tmp_path / "broken_tools.py").write_text(
        f"CATALOG = {str(CASES_DIR / 'fixtures' / 'wines.json')!r}\n" + BROKEN_TOOLS
    )
    declaration = textwrap.dedent(
        f"""
        [[suite.tool]]
        name = "semantic_search"
        description = "A broken stand-in for the catalog's semantic search"
        python = "broken_tools:{function}"
        [suite.tool.parameters]
        type = "object"
        required = ["query"]
        properties.query = {{ type = "string" }}
        properties.limit = {{ type = "integer" }}
        """
    )
    text = SUITE.read_text().replace(
        "\n[[suite.defaults.assert]]", declaration + "\n[[suite.defaults.assert]]", 1
    )
    suite = tmp_path / "sommelier-retrieval.toml"
    suite.write_text(text)
    # The suite reads the catalog beside it (requires = ["catalog"]).
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "wines.json").write_bytes(
        (CASES_DIR / "fixtures" / "wines.json").read_bytes()
    )
    return suite


def run(suite: Path, tmp_path: Path, home: Path) -> RunResult:
    outcome = execute_run(
        RunRequest(
            provider="scripted", paths=[suite], out_dir=tmp_path / "out", show_progress=False
        ),
        Settings(home=home),
        {},
    )
    return outcome.result


def statuses(result: RunResult) -> dict[str, set[str]]:
    """Per R6 check, the statuses it had across the suite's cases."""
    seen: dict[str, set[str]] = {name: set() for name in R6}
    for case in result.cases:
        for check in case.checks:
            if check.name in seen:
                seen[check.name].add(check.status)
    return seen


def test_the_suite_validates_with_r6_s_checks_on_every_case() -> None:
    suite = load_suite(SUITE)
    assert suite.table.kind == "retrieval" and suite.table.tools == ["semantic_search"]
    assert {"catalog", "embeddings"} <= set(suite.table.requires)
    ids = [c.id for c in suite.cases]
    assert {"berry-notes", "mineral-white"} <= set(ids)
    berry = next(c for c in suite.cases if c.id == "berry-notes")
    assert berry.input.model_dump()["args"] == {"query": "berry notes"}
    distinct = [a for a in berry.assertions if a.type == "distinct-from"]
    assert [(a.params.model_dump()["case"], a.params.model_dump()["k"]) for a in distinct] == [
        ("mineral-white", 3)
    ]


def test_it_runs_on_the_real_tool_with_no_model_and_no_script(
    tmp_path: Path, evalctl_home: Path
) -> None:
    result = run(SUITE, tmp_path, evalctl_home)
    assert [c.status for c in result.cases if c.status in ("error", "skipped")] == []
    seen = statuses(result)
    # The real tool sorts by similarity, and the fake embeddings tell these queries apart.
    assert seen["ordering"] == {"pass"} and seen["differentiation"] == {"pass"}
    berry = next(c for c in result.cases if c.id == "berry-notes")
    similarities = berry.tool_calls[0].data["similarities"]
    assert similarities == sorted(similarities, reverse=True) and len(similarities) == 5


@pytest.mark.parametrize(
    ("function", "caught_by"),
    [("constant", "relevance"), ("reversed_order", "ordering"), ("same_rows", "differentiation")],
)
def test_each_r6_check_fails_on_its_planted_broken_tool(
    function: str, caught_by: str, tmp_path: Path, evalctl_home: Path
) -> None:
    result = run(planted(tmp_path, function), tmp_path, evalctl_home)
    seen = statuses(result)
    # Every case the check is on fails it, and only that check fails: each catches its fault.
    assert seen[caught_by] == {"fail"}
    assert all(seen[other] == {"pass"} for other in R6 if other != caught_by), seen
    failed = {c.id for c in result.cases if c.status == "fail"}
    on = {c.id for c in result.cases if any(k.name == caught_by for k in c.checks)}
    assert failed == on and failed
    message = next(k.message for c in result.cases for k in c.checks if k.name == caught_by)
    assert message


def test_the_planted_tools_are_what_ran(tmp_path: Path, evalctl_home: Path) -> None:
    result = run(planted(tmp_path, "same_rows"), tmp_path, evalctl_home)
    rows = {json.dumps(c.tool_calls[0].data.get("value")) for c in result.cases}
    assert len(rows) == 1  # one answer for every query: the fault is real
