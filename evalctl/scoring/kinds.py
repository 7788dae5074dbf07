"""Suite kinds: each fixes the shape of a case's `input`/`expected`, builds the prompt and
names its default checks (`Check`s, evalctl.scoring.check). A suite names its kind in
`[suite] kind = "..."`.

Kinds are registered through the plugin API (`evalctl.plugin`): the built-in suites under
`evalctl/suites/` and any plugin alike, each imported on first use.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import Message, ToolCall
from evalctl.results.models import DrivenBy
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


@dataclass(frozen=True)
class Drive:
    """What a kind's `drive()` says a case is: the model conversation (`calls` None, the
    default), or `calls`, tool calls made in order through the same recording spy a model's
    calls go through, with no model asked; the case's answer is then the first call's result."""

    calls: list[ToolCall] | None = None

    @property
    def driven_by(self) -> DrivenBy:
        return "model" if self.calls is None else "tools"


# The default drive: the model conversation.
MODEL_CONVERSATION = Drive()


class SuiteKind(ABC):
    """The base of a suite kind. The required members are abstract; every optional hook is a
    method (or class attribute) with its default here. A plugin's kind that does not inherit
    is adapted once, when it is registered (evalctl.plugin_adapt)."""

    # Required, usually as class attributes (`name = "mine"`, `input_model = MyInput`).
    name: str
    input_model: type[BaseModel]
    expected_model: type[BaseModel]
    # Every check this kind can run, by name, in report order; the default set for suites.
    checks: Mapping[str, Check[Any]]
    # Optional: the kind reads the suite's `tool_choice` (else setting it is bad input).
    reads_tool_choice: bool = False

    @abstractmethod
    def build_prompt(self, suite: SuiteTable, case: Case, ctx: ToolContext) -> str | list[Message]:
        """The user's turn as text, or the whole conversation after the system prompt."""

    @abstractmethod
    def request_shape(self, suite: SuiteTable, case: Case) -> RequestShape:
        """How the runner shapes requests for the case."""

    def drive(self, suite: SuiteTable, case: Case) -> Drive:
        """How the case is driven: by default the model conversation (evalctl.runner.attempt);
        a model-free kind (retrieval) returns the tool calls to make instead."""
        return MODEL_CONVERSATION

    def link_cases(self, suite: SuiteTable, cases: list[Case]) -> None:
        """Loader hook, with every case of the suite before a --case filter narrows it: what
        one case needs of another (retrieval's distinct-from). Default: nothing."""
        return None

    def case_problems(
        self, suite: SuiteTable, case: Case, suite_dir: Path
    ) -> list[tuple[str, str]]:
        """What only the kind can tell of a case at validate time (a file it names, a
        cross-field rule), as (field, message) pairs. Default: none."""
        return []


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
