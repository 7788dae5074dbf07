"""The Tool protocol, the context a tool runs in, and the recording spy the runner uses."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from evalctl.cases.schema import Case
from evalctl.chat import ToolCall, ToolDef, ToolResult
from evalctl.config import Settings
from evalctl.results.models import ToolCallRecord


class ToolInputError(Exception):
    """The model called a tool with unusable arguments; the message goes back to the model."""


class ToolFailedError(ToolInputError):
    """The tool itself failed (an error, a non-zero exit, a timeout). Like a bad call, this
    goes back to the model as a tool error: it is the feature under test, not the harness."""


@dataclass
class ToolContext:
    case: Case
    fixtures_dir: Path
    settings: Settings
    # Resources the runner opened for the suite (`requires`, opened once per suite), by name.
    resources: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolOutput:
    """What a tool returns: text for the model, plus what the spy should record."""

    content: str
    # The arguments as the tool actually used them (after normalisation), if they differ.
    normalized_arguments: dict[str, Any] | None = None
    # Structured detail for scoring (rows returned, a parsed recipe, whether it broadened).
    data: dict[str, Any] = field(default_factory=dict)


class Tool(Protocol):
    @property
    def definition(self) -> ToolDef: ...

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput: ...


class ToolSpy:
    """Executes tool calls for one case and records each as it really ran."""

    def __init__(self, tools: dict[str, Tool], ctx: ToolContext):
        self._tools = tools
        self._ctx = ctx
        self.records: list[ToolCallRecord] = []

    def execute(self, call: ToolCall, turn: int) -> ToolResult:
        started = time.perf_counter()
        tool = self._tools.get(call.name)
        output: ToolOutput | None = None
        if tool is None:
            content, is_error = (
                f"error: unknown tool {call.name!r}; available: {', '.join(self._tools)}",
                True,
            )
        else:
            try:
                output = tool.run(dict(call.arguments), self._ctx)
                content, is_error = output.content, False
            except ToolInputError as exc:
                content, is_error = f"error: {exc}", True
        self.records.append(
            ToolCallRecord(
                turn=turn,
                name=call.name,
                arguments=call.arguments,
                normalized_arguments=output.normalized_arguments if output else None,
                result=content,
                data=output.data if output else {},
                is_error=is_error,
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
            )
        )
        return ToolResult(tool_call_id=call.id, name=call.name, content=content, is_error=is_error)


def to_json(value: Any) -> str:
    """Compact, stable JSON for tool results shown to the model."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
