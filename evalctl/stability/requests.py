"""Real requests for the stability commands, built from golden cases.

A soak should load the daemon the way a run does, so each case becomes the exact request
the runner sends on its first turn (evalctl.runner.attempt.run_attempt): the suite's system
prompt, the kind's user prompt, the tools, the tool choice of turn one, the JSON schema
and the token limit. Later turns depend on the model's answers and are left out: a soak
replays the same requests so that memory is compared across like for like.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evalctl.cases.schema import Suite
from evalctl.chat import CompletionRequest
from evalctl.config import Settings
from evalctl.plugin_loader import get_kind
from evalctl.runner.suite_tools import suite_tools
from evalctl.scoring.kinds import RequestShape, opening_messages, shape_for
from evalctl.tools.base import ToolContext


@dataclass(frozen=True)
class CaseCall:
    key: str
    request: CompletionRequest
    timeout_s: float


def _first_turn_choice(shape: RequestShape) -> str:
    # The runner's rule for turn one (attempt._tool_choice with turn == 1).
    if shape.first_turn_tool_choice is not None:
        return shape.first_turn_tool_choice
    return shape.tool_choice


def first_turn_calls(
    suites: list[Suite], settings: Settings, timeout_s: float | None = None
) -> list[CaseCall]:
    """One first-turn request per case, in suite file order.

    `timeout_s` overrides the per-request timeout; otherwise the case's, the suite's, then
    the configured case timeout apply, as in a run.
    """
    resources: dict[str, Any] = {}  # opened once, as a run shares them across cases
    calls = []
    for suite in suites:
        table = suite.table
        kind = get_kind(table.kind)
        assert kind is not None  # the loader rejected unknown kinds
        tools = suite_tools(suite)
        tool_defs = [tool.definition for tool in tools.values()]
        for case in suite.cases:
            ctx = ToolContext(
                case=case,
                fixtures_dir=suite.directory / "fixtures",
                settings=settings,
                resources=resources,
            )
            shape = shape_for(kind, table, case)
            request = CompletionRequest(
                messages=opening_messages(kind, table, case, ctx),
                tools=tool_defs,
                tool_choice=_first_turn_choice(shape) if tool_defs else "none",
                json_schema=shape.json_schema,
                max_tokens=table.max_tokens,
                tag=case.key,
            )
            timeout = timeout_s or case.timeout_s or table.timeout_s or settings.case_timeout_s
            calls.append(CaseCall(case.key, request, timeout))
    return calls
