"""The sommelier golden suite: it loads, its ground truth holds on the real catalog, and it runs
end to end through the runner (scripted provider), including auto-skip on unmet needs."""

# Russian test data: Cyrillic letters here are words, not look-alikes.
# ruff: noqa: RUF001

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalctl.cases.loader import load_suite
from evalctl.cases.schema import Case, Suite
from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.config import Settings
from evalctl.providers.base import CAP_JSON_SCHEMA
from evalctl.results.models import CaseResult, RunResult
from evalctl.retry import RetryPolicy
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from evalctl.suites.sommelier.kind import CatalogQaExpected, CatalogQaInput
from evalctl.suites.sommelier.tools import MAX_LIMIT, SEARCH_WINES, SEMANTIC_SEARCH
from evalctl.tools.base import ToolContext
from tests.catalog_support import CASES_DIR, make_ctx, settings_for

SUITE_PATH = CASES_DIR / "sommelier.toml"
NO_SLEEP = RetryPolicy(max_attempts=2, sleep=lambda _s: None)


@pytest.fixture(scope="module")
def suite() -> Suite:
    return load_suite(SUITE_PATH)


def expected_of(case: Case) -> CatalogQaExpected:
    assert isinstance(case.expected, CatalogQaExpected)
    return case.expected


def query_of(case: Case) -> str:
    assert isinstance(case.input, CatalogQaInput)
    return case.input.query


def ground_truth_call(case: Case) -> tuple[str, dict[str, Any]]:
    """The tool call the expected values describe."""
    expected = expected_of(case)
    if expected.tool == "semantic_search":
        return "semantic_search", {"query": " ".join(expected.query_terms)}
    return "search_wines", dict(expected.filters)


# --- shape of the suite ----------------------------------------------------------------------


def test_suite_loads_with_its_requirements(suite: Suite) -> None:
    assert suite.name == "sommelier"
    assert suite.table.kind == "catalog-qa"
    assert suite.table.requires == ["tools", "catalog"]
    assert suite.table.tools == ["search_wines", "semantic_search"]
    assert "[WINE:" in suite.table.system_prompt and "[NO MATCH]" in suite.table.system_prompt


def test_suite_covers_what_the_issue_asks_for(suite: Suite) -> None:
    cases = suite.cases
    assert len(cases) >= 14
    features = [set(c.features) for c in cases]
    for needed in ("ru", "en", "filters", "price", "semantic", "unavailable", "multi"):
        assert sum(needed in f for f in features) >= 2, needed
    assert {expected_of(c).tool for c in cases} == {"search_wines", "semantic_search"}
    assert any(len(expected_of(c).filters) >= 4 for c in cases)
    assert any("min_price" in expected_of(c).filters for c in cases)


def test_language_tags_match_the_queries(suite: Suite) -> None:
    for case in suite.cases:
        cyrillic = re.search("[а-яА-ЯёЁ]", query_of(case)) is not None
        assert ("ru" in case.features) == cyrillic, case.id
        assert ("en" in case.features) != cyrillic, case.id


# --- ground truth against the real catalog ---------------------------------------------------


@pytest.mark.parametrize("case_id", [c.id for c in load_suite(SUITE_PATH).cases])
def test_expected_search_really_returns_min_results(
    suite: Suite, case_id: str, evalctl_home: Path
) -> None:
    case = next(c for c in suite.cases if c.id == case_id)
    expected = expected_of(case)
    ctx = make_ctx(evalctl_home, case)
    name, arguments = ground_truth_call(case)
    tool = SEARCH_WINES if name == "search_wines" else SEMANTIC_SEARCH
    output = tool.run({**arguments, "limit": MAX_LIMIT}, ctx)
    if name == "search_wines":
        # What the spy records for the expected filters is exactly the expected filters.
        assert output.normalized_arguments == {**expected.filters, "limit": MAX_LIMIT}
    if expected.available:
        assert output.data["broadened"] is False
        assert output.data["row_count"] >= expected.min_results
        # ...and with the default limit a model would get, too.
        assert tool.run(arguments, ctx).data["row_count"] >= expected.min_results
    else:
        assert output.data["matched"] == 0 and output.data["broadened"] is True


# --- end to end through the runner -------------------------------------------------------------


def perfect_script(suite: Suite, ctx: ToolContext) -> dict[str, Any]:
    """Per case: the ground-truth tool call, then an answer naming the rows it returns."""
    cases: dict[str, Any] = {}
    for case in suite.cases:
        name, arguments = ground_truth_call(case)
        tool = SEARCH_WINES if name == "search_wines" else SEMANTIC_SEARCH
        rows = tool.run(arguments, ctx).data["rows"]
        if expected_of(case).available:
            answer = "\n".join(f"[WINE: {row}] a good fit." for row in rows[:3])
        else:
            answer = f"[NO MATCH] Nothing like that here.\n[WINE: {rows[0]}] is the closest."
        cases[case.key] = [
            {"tool_calls": [{"name": name, "arguments": arguments}]},
            {"content": answer},
        ]
    return {"model": "scripted-sommelier", "cases": cases}


def run_suite(
    tmp_path: Path, script: dict[str, Any], settings: Settings, **request: Any
) -> RunResult:
    script_path = tmp_path / "script.json"
    script_path.write_text(json.dumps(script, ensure_ascii=False))
    outcome = execute_run(
        RunRequest(
            provider="scripted",
            script=script_path,
            paths=[SUITE_PATH],
            out_dir=tmp_path / "out",
            show_progress=False,
            **request,
        ),
        settings,
        {},
        retry=NO_SLEEP,
    )
    return outcome.result


def by_id(result: RunResult) -> dict[str, CaseResult]:
    return {c.id: c for c in result.cases}


def test_a_perfect_script_passes_every_golden_case(
    suite: Suite, tmp_path: Path, evalctl_home: Path
) -> None:
    script = perfect_script(suite, make_ctx(evalctl_home))
    result = run_suite(tmp_path, script, settings_for(evalctl_home))
    assert len(result.cases) == len(suite.cases)
    not_passed = {c.id: [k.message for k in c.checks if not k.passed] for c in result.cases
                  if c.status != "pass"}  # fmt: skip
    assert not_passed == {}
    # The results record each tool call as executed: normalised arguments and rows.
    italian = by_id(result)["ru-italian-dry-red-under-40"]
    call = italian.tool_calls[0]
    assert call.normalized_arguments == {
        "color": "red", "sweetness": "dry", "country": "Italy", "max_price": 40.0, "limit": 5,
    }  # fmt: skip
    assert call.data["rows"] == ["Planeta Nero d'Avola", "Castello di Ama Chianti Classico"]


def test_scripted_faults_fail_the_right_checks(
    suite: Suite, tmp_path: Path, evalctl_home: Path
) -> None:
    script = perfect_script(suite, make_ctx(evalctl_home))
    cases = script["cases"]
    # A hallucinated wine, a wrong filter, a wrong tool, and a broadened search.
    cases["sommelier/en-pinot-noir"][1]["content"] += "\n[WINE: Domaine de la Romanée-Conti]"
    cases["sommelier/ru-tuscany"][0]["tool_calls"][0]["arguments"] = {"region": "Piedmont"}
    cases["sommelier/en-bold-for-steak"][0]["tool_calls"][0] = {
        "name": "search_wines", "arguments": {"color": "red"},
    }  # fmt: skip
    cases["sommelier/en-red-under-20"][0]["tool_calls"][0]["arguments"] = {
        "color": "red", "max_price": 5,
    }  # fmt: skip
    cases["sommelier/en-rose-under-10"][1]["content"] = "Sure: [WINE: Bodegas Muga Rosado]."
    result = by_id(run_suite(tmp_path, script, settings_for(evalctl_home)))

    def failing(case_id: str) -> dict[str, str]:
        return {c.name: c.message for c in result[case_id].checks if c.failed}

    assert failing("en-pinot-noir").keys() == {"grounding"}
    assert "Romanée-Conti" in failing("en-pinot-noir")["grounding"]
    # Piedmont's rows are not the Tuscan wines the answer names: not grounded either.
    assert failing("ru-tuscany").keys() == {"filters", "grounding"}
    assert "region: expected 'Tuscany', got 'Piedmont'" in failing("ru-tuscany")["filters"]
    assert {"tool_selection", "filters", "min_results"} <= failing("en-bold-for-steak").keys()
    assert failing("en-red-under-20").keys() == {"filters", "min_results"}
    assert "broadened" in failing("en-red-under-20")["min_results"]
    # A returned wine offered as if it matched: grounded, but not the [NO MATCH] format.
    assert failing("en-rose-under-10").keys() == {"format"}
    assert result["en-italian-red"].status == "pass"


PROBES = [
    # (the answer, grounding passes?, format passes?)
    ("For under $20 I would pick the Planeta Nero d'Avola", True, False),
    ("[WINE: Fake Estate Tignanello Reserve] a bargain.", False, True),
    ("[WINE: Tignanello] a classic.", False, True),
]


@pytest.mark.parametrize(("answer", "grounded", "formatted"), PROBES)
def test_grounding_probes_on_en_red_under_20(
    tmp_path: Path, evalctl_home: Path, answer: str, grounded: bool, formatted: bool
) -> None:
    # The search the case expects (red, at most $20) returns five wines, the Planeta among
    # them; Tignanello is in the catalog at $130 but this search does not return it.
    script = {
        "model": "probe",
        "cases": {
            "sommelier/en-red-under-20": [
                {
                    "tool_calls": [
                        {"name": "search_wines", "arguments": {"color": "red", "max_price": 20}}
                    ]
                },
                {"content": answer},
            ]
        },
    }
    result = run_suite(tmp_path, script, settings_for(evalctl_home), case_glob="en-red-under-20")
    (case,) = result.cases
    checks = {c.name: c for c in case.checks}
    assert "Planeta Nero d'Avola" in case.tool_calls[0].data["rows"]
    assert "Tignanello" not in case.tool_calls[0].data["rows"]
    assert checks["grounding"].passed is grounded, checks["grounding"].message
    assert checks["format"].passed is formatted, checks["format"].message
    assert checks["tool_selection"].passed and checks["filters"].passed
    if not grounded:
        assert "Tignanello" in checks["grounding"].message


class NoToolsProvider:
    """A provider that cannot call tools: suites that need tools must be skipped, not failed."""

    name = "no-tools"
    model = "none"
    model_sha256 = None
    capabilities = frozenset({CAP_JSON_SCHEMA})

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        raise AssertionError("a skipped suite must not reach the provider")

    def close(self) -> None:
        pass


def test_a_provider_without_tools_skips_every_case_with_the_reason(
    suite: Suite, tmp_path: Path, evalctl_home: Path
) -> None:
    outcome = execute_run(
        RunRequest(paths=[SUITE_PATH], out_dir=tmp_path / "out", show_progress=False),
        settings_for(evalctl_home),
        {},
        provider_override=NoToolsProvider(),
        retry=NO_SLEEP,
    )
    cases = outcome.result.cases
    assert len(cases) == len(suite.cases)  # skipped, never silently absent
    assert {c.status for c in cases} == {"skipped"}
    assert cases[0].skip_reason == "provider 'no-tools' lacks the 'tools' capability"


def test_a_missing_catalog_skips_every_case_with_the_reason(
    suite: Suite, tmp_path: Path, evalctl_home: Path
) -> None:
    # The catalog is looked up next to the suite file: this copy has no fixtures/ beside it.
    lonely = tmp_path / "lonely" / "sommelier.toml"
    lonely.parent.mkdir()
    lonely.write_text(SUITE_PATH.read_text())
    script_path = tmp_path / "script.json"
    script_path.write_text(json.dumps({"default": [{"content": "unused"}]}))
    outcome = execute_run(
        RunRequest(
            provider="scripted",
            script=script_path,
            paths=[lonely],
            out_dir=tmp_path / "out",
            show_progress=False,
        ),
        settings_for(evalctl_home),
        {},
        retry=NO_SLEEP,
    )
    result = outcome.result
    assert len(result.cases) == len(suite.cases)
    assert {c.status for c in result.cases} == {"skipped"}
    reason = result.cases[0].skip_reason or ""
    assert reason.startswith("requirement 'catalog' not met: wine catalog")
    assert str(lonely.parent / "fixtures" / "wines.json") in reason and "not found" in reason


def test_the_catalog_is_found_from_any_working_directory(
    tmp_path: Path, evalctl_home: Path
) -> None:
    # A real `evalctl run` in another directory (no evalctl.toml, no cases/ there): the
    # catalog resolves against the suite file, so the cases run instead of being skipped.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = elsewhere / "script.json"
    script.write_text(json.dumps({"default": [{"content": "[NO MATCH]"}]}))
    proc = subprocess.run(
        [sys.executable, "-m", "evalctl.cli", "run", "--provider", "scripted", "--script",
         str(script), "--json", "--out", str(elsewhere / "out"), "--cases", str(SUITE_PATH)],
        cwd=elsewhere, capture_output=True, text=True, check=False,
        env={**os.environ, "EVALCTL_HOME": str(evalctl_home)},
    )  # fmt: skip
    assert proc.returncode in (0, 1), proc.stderr
    statuses = {c["status"] for c in json.loads(proc.stdout)["cases"]}
    assert "skipped" not in statuses and statuses <= {"pass", "fail"}
