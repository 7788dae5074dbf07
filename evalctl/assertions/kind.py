"""The `assert` kind: a case is an input (a prompt or messages) plus `[[case.assert]]`
tables, each becoming one named check (evalctl.scoring.declared). The kind itself names no
checks: everything a case is judged on is declared in the suite file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import Message, Role
from evalctl.scoring.check import Check
from evalctl.scoring.kinds import RequestShape
from evalctl.tools.base import ToolContext


class InputMessage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: str


class AssertInput(BaseModel):
    """`input = { prompt = "..." }` or `input = { messages = [{ role, content }, ...] }`."""

    model_config = ConfigDict(extra="forbid")

    prompt: str | None = None
    messages: list[InputMessage] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_form(self) -> AssertInput:
        if (self.prompt is None) == (self.messages is None):
            raise ValueError("give exactly one of prompt, messages")
        if self.messages is not None and self.messages[-1].role != "user":
            raise ValueError("the last message must have role 'user'")
        return self


class NoExpected(BaseModel):
    """An assert case states what it expects in `[[case.assert]]`, not in `expected`."""

    model_config = ConfigDict(extra="forbid")


class AssertKind:
    name = "assert"
    input_model = AssertInput
    expected_model = NoExpected
    # A case's checks are its assertions; there is no fixed set to pick from.
    checks: Mapping[str, Check[Any]] = {}
    # `[suite] tool_choice` is honoured (request_shape); the loader refuses it for other kinds.
    reads_tool_choice = True

    def build_prompt(self, suite: SuiteTable, case: Case, ctx: ToolContext) -> str | list[Message]:
        assert isinstance(case.input, AssertInput)
        if case.input.messages is None:
            assert case.input.prompt is not None  # the model validator saw to it
            return case.input.prompt
        return [Message(role=Role(m.role), content=m.content) for m in case.input.messages]

    def request_shape(self, suite: SuiteTable, case: Case) -> RequestShape:
        return suite_tool_choice(suite, RequestShape(json_schema=suite.output_schema))

    def case_problems(
        self, suite: SuiteTable, case: Case, suite_dir: Path
    ) -> list[tuple[str, str]]:
        """Loader hook: a case with nothing to check would pass on any answer."""
        if not case.assertions and suite.output_schema is None:
            return [("case.assert", "an assert case needs at least one [[case.assert]]")]
        return []


def suite_tool_choice(suite: SuiteTable, shape: RequestShape) -> RequestShape:
    """`shape` with `[suite] tool_choice` applied. A forced choice (`required`, a tool's name)
    holds for the first turn only: forced on every turn, the model could never answer in
    text, and each turn would call a tool until `max_turns` ran out."""
    choice = suite.tool_choice
    if choice is None or choice in ("auto", "none"):
        shape.tool_choice = choice or "auto"
    else:
        shape.tool_choice, shape.first_turn_tool_choice = "auto", choice
    return shape


KIND = AssertKind()
