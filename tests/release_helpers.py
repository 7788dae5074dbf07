"""Helpers for the release-assets tests: the shipped suites, and tool calls run for real."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from evalctl.cases.loader import load_suite
from evalctl.cases.schema import Case, Suite
from evalctl.chat import ToolCall
from evalctl.config import Settings
from evalctl.plugin_loader import get_tools
from evalctl.scoring.check import Transcript
from evalctl.tools.base import ToolContext, ToolSpy

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "cases"
FIXTURES = CASES / "fixtures"
RECIPE_SUITE = CASES / "release-assets.toml"
TRIAGE_SUITE = CASES / "asset-triage.toml"
TOOL_NAMES = ["fetch_file", "inspect_archive", "extract_pattern"]


@cache
def suite(path: Path) -> Suite:
    return load_suite(path)


def recipe_case(case_id: str) -> Case:
    return next(c for c in suite(RECIPE_SUITE).cases if c.id == case_id)


def context(case: Case, fixtures_dir: Path = FIXTURES) -> ToolContext:
    return ToolContext(case=case, fixtures_dir=fixtures_dir, settings=Settings())


def run_calls(case: Case, calls: list[tuple[str, dict[str, Any]]]) -> Transcript:
    """Execute tool calls through the real spy and tools, one per turn, as the runner does."""
    spy = ToolSpy(get_tools(TOOL_NAMES), context(case))
    for turn, (name, arguments) in enumerate(calls, start=1):
        spy.execute(ToolCall(id=f"call_{turn}", name=name, arguments=arguments), turn)
    return Transcript(messages=[], responses=[], tool_calls=spy.records)


def truth_recipe(case: Case) -> dict[str, Any]:
    """The ground truth as extract_pattern arguments (first spelling of each mapping)."""
    exp = case.expected.model_dump()
    args = {k: exp[k] for k in ("action", "asset_pattern", "format", "executable")}
    for key in ("os_mapping", "arch_mapping"):
        args[key] = {k: v if isinstance(v, str) else v[0] for k, v in exp[key].items()}
    args["verify"] = exp["verify"] or f"{exp['executable']} --version"
    for key in ("strip_prefix", "install_subpath", "rename"):
        if exp[key] is not None:
            args[key] = exp[key]
    return args
