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
from evalctl.scoring.kinds import RequestShape, SuiteKind
from evalctl.tools.base import ToolContext


class InputMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    role: Literal["user", "assistant"]
    content: str


class AssertInput(BaseModel):
    """`input = { prompt = "..." }` or `input = { messages = [{ role, content }, ...] }`; or,
    for a suite whose python target takes keywords (`call = "keywords"`), fields of the
    application's own (`input = { question = "..." }`), which `case_problems` refuses for any
    other suite."""

    # A number where text is expected is its text (a row's typed `{{ n }}`).
    model_config = ConfigDict(extra="allow", coerce_numbers_to_str=True)

    prompt: str | None = None
    messages: list[InputMessage] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _one_form(self) -> AssertInput:
        if self.prompt is not None and self.messages is not None:
            raise ValueError("give exactly one of prompt, messages")
        if self.prompt is None and self.messages is None and not self.fields():
            raise ValueError("give exactly one of prompt, messages")
        if self.messages is not None and self.messages[-1].role != "user":
            raise ValueError("the last message must have role 'user'")
        return self

    def fields(self) -> dict[str, Any]:
        """The fields besides `prompt` and `messages`: keywords of the application's."""
        return dict(self.__pydantic_extra__ or {})

    def user_text(self) -> str:
        """The user message of a case written as fields: a lone text field's value, else
        each field on a line of its own (`name: value`)."""
        fields = self.fields()
        if len(fields) == 1 and isinstance(next(iter(fields.values())), str):
            return str(next(iter(fields.values())))
        return "\n".join(f"{key}: {value}" for key, value in fields.items())


class NoExpected(BaseModel):
    """An assert case states what it expects in `[[case.assert]]`, not in `expected`."""

    model_config = ConfigDict(extra="forbid")


class AssertKind(SuiteKind):
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
            if case.input.prompt is None:
                return case.input.user_text()  # a keyword target's fields
            return case.input.prompt
        return [Message(role=Role(m.role), content=m.content) for m in case.input.messages]

    def request_shape(self, suite: SuiteTable, case: Case) -> RequestShape:
        return suite_tool_choice(suite, RequestShape(json_schema=suite.output_schema))

    def case_problems(
        self, suite: SuiteTable, case: Case, suite_dir: Path
    ) -> list[tuple[str, str]]:
        """Loader hook: a case with nothing to check would pass on any answer; input fields
        of the application's own need a python target that takes them as keywords."""
        problems: list[tuple[str, str]] = []
        if not case.assertions and suite.output_schema is None:
            problems.append(("case.assert", "an assert case needs at least one [[case.assert]]"))
        assert isinstance(case.input, AssertInput)
        keywords = any(getattr(t, "call", None) == "keywords" for t in suite.target)
        if not keywords:
            problems += [
                (
                    f"case.input.{key}",
                    "unknown key (input takes prompt or messages; fields of your own are "
                    'for a python target with call = "keywords")',
                )
                for key in case.input.fields()
            ]
        return problems


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
