"""The Tool base class, the context a tool runs in, and the recording spy the runner uses.

The spy checks a call's arguments against the tool's `parameters` (a JSON Schema) before the
tool runs: invalid ones go back to the model as a tool error, and the record lists why
(`invalid_arguments`). A tool whose class sets `lenient_arguments = True` reads its
arguments leniently itself (normalising them and saying so): it runs whatever it is given,
and the record still lists what broke the schema. A tool whose `parameters` is not a
schema that can be checked (a plugin's, never validated) runs unchecked.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalctl.cases.schema import Case
from evalctl.chat import ToolCall, ToolDef, ToolResult
from evalctl.config import Settings
from evalctl.embeddings import Embedder
from evalctl.json_schema import schema_problem, validation_errors
from evalctl.results.models import ToolCallRecord
from evalctl.userfiles import MAX_NESTING

# A record sits some 20 levels into a results file (run, case, attempt, tool call, field):
# what a tool call records nests at most this much of its own, so every results file,
# journal and baseline evalctl writes can be read back (userfiles.MAX_NESTING).
RECORD_NESTING = MAX_NESTING - 20
CUT = f"<cut: nested more than {RECORD_NESTING} levels deep>"


class ToolInputError(Exception):
    """The model called a tool with unusable arguments; the message goes back to the model."""


class ToolFailedError(ToolInputError):
    """The tool itself failed (an error, a non-zero exit, a timeout). Like a bad call, this
    goes back to the model as a tool error: it is the feature under test, not the harness.
    `data`: what the spy records of the failed call besides its message (an MCP server's
    error result, its content and structured content)."""

    def __init__(self, message: str, *, data: dict[str, Any] | None = None):
        super().__init__(message)
        self.data = data or {}


@dataclass
class ToolContext:
    case: Case
    fixtures_dir: Path
    settings: Settings
    # Resources the runner opened for the suite (`requires`, opened once per suite), by name.
    resources: dict[str, Any] = field(default_factory=dict)
    # When the case's time runs out (time.monotonic()); None: no case deadline (a test, a
    # tool run outside a case). A tool call must not run past it.
    deadline: float | None = None
    # The run's embedding provider (evalctl.runner.embedding); None outside a run or where
    # the run has none, and a tool that needs one says so.
    embedder: Embedder | None = None

    def time_left(self) -> float | None:
        """Seconds until the case's deadline (0 once past it); None without one."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def call_timeout(self, tool_timeout: float) -> float:
        """How long one call may run: the tool's own limit, or the case's time left if less."""
        left = self.time_left()
        return tool_timeout if left is None else min(tool_timeout, left)


@dataclass
class ToolOutput:
    """What a tool returns: text for the model, plus what the spy should record."""

    content: str
    # The arguments as the tool actually used them (after normalisation), if they differ.
    normalized_arguments: dict[str, Any] | None = None
    # Structured detail for scoring (rows returned, a parsed recipe, whether it broadened).
    data: dict[str, Any] = field(default_factory=dict)


class Tool(ABC):
    """The base of a tool: `definition` (a class attribute, usually) and `run` are required;
    the optional hook has its default here. A plugin's tool that does not inherit is adapted
    once, when it is registered (evalctl.plugin_adapt)."""

    # What the model sees: its name (the name suites list), description and parameters.
    definition: ToolDef
    # It reads its arguments leniently itself (the module docstring): it runs on arguments
    # that break its schema, and the record still lists what broke it.
    lenient_arguments: bool = False

    @abstractmethod
    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """The tool's result; `ToolInputError` for unusable arguments."""


class ToolSpy:
    """Executes tool calls for one case and records each as it really ran."""

    def __init__(self, tools: dict[str, Tool], ctx: ToolContext):
        self._tools = tools
        self._ctx = ctx
        self.records: list[ToolCallRecord] = []
        self._schema_ok: dict[str, bool] = {}

    def _checkable(self, name: str, tool: Tool) -> bool:
        # A declared tool's schema was checked at load; a plugin's was not, and jsonschema
        # raises on a broken one: such a tool runs unchecked, as it did before checking.
        if name not in self._schema_ok:
            self._schema_ok[name] = schema_problem(tool.definition.parameters) is None
        return self._schema_ok[name]

    def execute(self, call: ToolCall, turn: int) -> ToolResult:
        started = time.perf_counter()
        tool = self._tools.get(call.name)
        output: ToolOutput | None = None
        failed: dict[str, Any] = {}
        invalid: list[str] = []
        if tool is not None and self._checkable(call.name, tool):
            invalid = validation_errors(tool.definition.parameters, call.arguments)
        if tool is None:
            content, is_error = (
                f"error: unknown tool {call.name!r}; available: {', '.join(self._tools)}",
                True,
            )
        elif invalid and not tool.lenient_arguments:
            listed = "; ".join(invalid)
            content, is_error = f"error: invalid arguments for {call.name!r}: {listed}", True
        else:
            try:
                output = tool.run(dict(call.arguments), self._ctx)
                content, is_error = output.content, False
            except ToolInputError as exc:
                content, is_error = f"error: {exc}", True
                failed = exc.data if isinstance(exc, ToolFailedError) else {}
        self.records.append(
            ToolCallRecord(
                turn=turn,
                name=call.name,
                arguments=capped(call.arguments),
                normalized_arguments=capped(output.normalized_arguments) if output else None,
                result=content,
                data=capped(output.data) if output else capped(failed),
                is_error=is_error,
                invalid_arguments=invalid,
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
            )
        )
        return ToolResult(tool_call_id=call.id, name=call.name, content=content, is_error=is_error)


def capped(value: Any, limit: int = RECORD_NESTING) -> Any:
    """`value` with whatever lies deeper than `limit` levels replaced by the `CUT` marker:
    the model's arguments and a plugin tool's data are recorded as they came, and a value
    nested past what the readers accept would make the whole results file unreadable."""
    if limit <= 0 and isinstance(value, dict | list | tuple):
        return CUT
    if isinstance(value, dict):
        return {k: capped(v, limit - 1) for k, v in value.items()}
    if isinstance(value, list):
        return [capped(v, limit - 1) for v in value]
    if isinstance(value, tuple):
        return tuple(capped(v, limit - 1) for v in value)
    return value


def to_json(value: Any) -> str:
    """Compact, stable JSON for tool results shown to the model."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
