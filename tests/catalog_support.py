"""Helpers for the catalog tests: a tool context on the real catalog, catalog-qa cases, and
conversations whose tool calls are executed by the real tools through the runner's spy."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalctl.cases.schema import Case
from evalctl.chat import CompletionResponse, Message, ToolCall
from evalctl.config import Settings
from evalctl.plugin_loader import get_tools
from evalctl.providers.scripted import Script, ScriptedProvider
from evalctl.scoring.check import Transcript
from evalctl.suites.sommelier.kind import CatalogQaExpected, CatalogQaInput
from evalctl.tools.base import ToolContext, ToolSpy

REPO = Path(__file__).resolve().parent.parent
CASES_DIR = REPO / "cases"
FIXTURES = CASES_DIR / "fixtures"
CHECKS = ["tool_selection", "filters", "min_results", "grounding", "format"]


def settings_for(home: Path, **overrides: Any) -> Settings:
    return Settings(home=home, cases_dir=CASES_DIR, **overrides)


def make_case(query: str = "q", case_id: str = "c", **expected: Any) -> Case:
    return Case(
        suite="sommelier",
        id=case_id,
        description="",
        features=[],
        input=CatalogQaInput(query=query),
        expected=CatalogQaExpected.model_validate(expected),
        checks=list(CHECKS),
        timeout_s=None,
    )


def make_ctx(home: Path, case: Case | None = None, **overrides: Any) -> ToolContext:
    case = case or make_case(tool="search_wines", filters={"color": "red"}, min_results=1)
    # semantic_search embeds with the scripted provider's fake, as a scripted run does.
    return ToolContext(
        case=case,
        fixtures_dir=FIXTURES,
        settings=settings_for(home, **overrides),
        embedder=ScriptedProvider(Script()),
    )


def converse(ctx: ToolContext, calls: list[tuple[str, dict[str, Any]]], answer: str) -> Transcript:
    """One tool call per turn, each executed for real through the spy, then a final answer."""
    spy = ToolSpy(get_tools(["search_wines", "semantic_search"]), ctx)
    messages = [Message.system("sommelier"), Message.user("query")]
    responses: list[CompletionResponse] = []
    for turn, (name, arguments) in enumerate(calls, start=1):
        call = ToolCall(id=f"call_{turn}", name=name, arguments=arguments)
        response = CompletionResponse(tool_calls=[call], stop_reason="tool_use")
        responses.append(response)
        messages.append(response.as_message())
        messages.append(Message.tool_result(spy.execute(call, turn)))
    final = CompletionResponse(content=answer)
    responses.append(final)
    messages.append(final.as_message())
    return Transcript(messages, responses, spy.records)
