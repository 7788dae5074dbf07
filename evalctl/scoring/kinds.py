"""Suite kinds: each fixes the shape of a case's `input`/`expected`, builds the prompt and
names its default checks (`Check`s, evalctl.scoring.check). A suite names its kind in
`[suite] kind = "..."`.

Kinds are registered through the plugin API (`evalctl.plugin`): the built-in suites under
`evalctl/suites/` and any plugin alike, each imported on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import Message
from evalctl.scoring.check import Check
from evalctl.tools.base import ToolContext


@dataclass
class RequestShape:
    """How the runner shapes requests for a case."""

    # A JSON Schema the final answer must satisfy (grammar-constrained where supported).
    json_schema: dict[str, Any] | None = None
    tool_choice: str = "auto"
    # Overrides tool_choice on the first turn only. Small local models emit tool calls
    # reliably only when forced, yet must be free to answer in text once tools have run.
    first_turn_tool_choice: str | None = None
    # A successful call of this tool ends the conversation: the recipe has been submitted.
    terminal_tool: str | None = None


class SuiteKind(Protocol):
    # Read-only members, so a kind may narrow them (`input_model = MyInput`).
    @property
    def name(self) -> str: ...

    @property
    def input_model(self) -> type[BaseModel]: ...

    @property
    def expected_model(self) -> type[BaseModel]: ...

    # Every check this kind can run, by name, in report order; the default set for suites.
    @property
    def checks(self) -> Mapping[str, Check[Any]]: ...

    # The user's turn as text, or the whole conversation after the system prompt.
    def build_prompt(
        self, suite: SuiteTable, case: Case, ctx: ToolContext
    ) -> str | list[Message]: ...

    def request_shape(self, suite: SuiteTable, case: Case) -> RequestShape: ...


def opening_messages(
    kind: SuiteKind, suite: SuiteTable, case: Case, ctx: ToolContext
) -> list[Message]:
    """The conversation a case starts with: the system prompt (if any), then the kind's turn."""
    built = kind.build_prompt(suite, case, ctx)
    conversation = [Message.user(built)] if isinstance(built, str) else built
    system = [Message.system(suite.system_prompt)] if suite.system_prompt.strip() else []
    return system + conversation


def shape_for(kind: SuiteKind, suite: SuiteTable, case: Case) -> RequestShape:
    """The kind's request shape, with the suite's `output_schema` (if any) as the answer's
    schema: the suite file has the last word."""
    shape = kind.request_shape(suite, case)
    if suite.output_schema is not None:
        shape.json_schema = suite.output_schema
    return shape
