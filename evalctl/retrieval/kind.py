"""The `retrieval` kind: a case calls one of the suite's tools directly, with no model, and
its assertions (evalctl.retrieval.checks) judge the rows the tool returned.

`input = { tool = "semantic_search", args = { query = "..." } }`. The runner makes the call
through the same recording spy a model's calls go through (its `drive()`): the arguments
are checked against the tool's `parameters`, and the results record the call, its result
and its duration. A `distinct-from` assertion compares with another case's rows: that
case's call is made again in this case (retrieval tools are deterministic), so the
assertion holds under `--case` filters, shards and resume alike.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from evalctl.cases.schema import Case, SuiteTable
from evalctl.cases.tooldecl import TOOL_NAME_PATTERN
from evalctl.chat import Message, ToolCall
from evalctl.json_schema import schema_problem, validation_errors
from evalctl.scoring.check import Check
from evalctl.scoring.kinds import Drive, RequestShape, SuiteKind
from evalctl.tools.base import ToolContext

# The assertion type that names another case (evalctl.retrieval.checks).
DISTINCT_FROM = "distinct-from"
# The id of the case's own call; a re-made call of another case is `case:<id>`.
OWN_CALL_ID = "retrieval"


class RetrievalInput(BaseModel):
    """`input = { tool = "...", args = { ... } }`: the tool to call and its arguments."""

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(pattern=TOOL_NAME_PATTERN)
    args: dict[str, Any] = Field(default_factory=dict)
    # The inputs of the cases this case's distinct-from assertions name, by case id: set when
    # the suite loads (`RetrievalKind.link_cases`), before a --case filter can drop them.
    _others: dict[str, RetrievalInput] = PrivateAttr(default_factory=dict)

    def other(self, case_id: str) -> RetrievalInput | None:
        """The input of case `case_id`, where a distinct-from assertion of this case names it."""
        return self._others.get(case_id)

    def call(self, call_id: str) -> ToolCall:
        return ToolCall(id=call_id, name=self.tool, arguments=dict(self.args))


class NoExpected(BaseModel):
    """A retrieval case states what it expects in `[[case.assert]]`, not in `expected`."""

    model_config = ConfigDict(extra="forbid")


def named_cases(case: Case) -> list[str]:
    """The other cases this case's distinct-from assertions compare with, once each."""
    named = [getattr(s.params, "case", "") for s in case.assertions if s.type == DISTINCT_FROM]
    return list(dict.fromkeys(named))


class RetrievalKind(SuiteKind):
    name = "retrieval"
    input_model = RetrievalInput
    expected_model = NoExpected
    # A case's checks are its assertions, as in the `assert` kind.
    checks: Mapping[str, Check[Any]] = {}

    def build_prompt(self, suite: SuiteTable, case: Case, ctx: ToolContext) -> str | list[Message]:
        # Never sent (no model is asked); it says what the case does where a prompt is shown.
        assert isinstance(case.input, RetrievalInput)
        return f"{case.input.tool}({json.dumps(case.input.args, sort_keys=True)})"

    def request_shape(self, suite: SuiteTable, case: Case) -> RequestShape:
        return RequestShape(tool_choice="none")

    def drive(self, suite: SuiteTable, case: Case) -> Drive:
        """A model-free kind drives its case itself: the calls to make, in order, instead of
        a conversation. The case's own call first, then each compared case's call again."""
        assert isinstance(case.input, RetrievalInput)
        calls = [case.input.call(OWN_CALL_ID)]
        for case_id in named_cases(case):
            other = case.input.other(case_id)
            if other is not None:
                calls.append(other.call(f"case:{case_id}"))
        return Drive(calls=calls)

    def link_cases(self, suite: SuiteTable, cases: list[Case]) -> None:
        """Loader hook, with every case of the suite: gives each case the inputs of the cases
        its distinct-from assertions name (the loader has checked that they exist)."""
        inputs = {c.id: c.input for c in cases if isinstance(c.input, RetrievalInput)}
        for case in cases:
            assert isinstance(case.input, RetrievalInput)
            case.input._others = {
                case_id: inputs[case_id] for case_id in named_cases(case) if case_id in inputs
            }

    def case_problems(
        self, suite: SuiteTable, case: Case, suite_dir: Path
    ) -> list[tuple[str, str]]:
        """Loader hook: the tool is one the suite offers, and (for a tool the suite declares)
        the arguments satisfy its `parameters`; there is something to check."""
        assert isinstance(case.input, RetrievalInput)
        problems: list[tuple[str, str]] = []
        tool = case.input.tool
        if tool not in suite.tools:
            offered = ", ".join(suite.tools) or "none"
            problems.append(
                ("case.input.tool", f"{tool!r} is not one of the suite's tools ({offered})")
            )
        declared = next((d for d in suite.tool if d.name == tool), None)
        # A registered tool's parameters are checked when the call is made, by the spy.
        if declared is not None and schema_problem(declared.parameters) is None:
            invalid = validation_errors(declared.parameters, case.input.args)
            if invalid:
                problems.append(
                    ("case.input.args", f"invalid arguments for {tool!r}: {'; '.join(invalid)}")
                )
        if not case.assertions:
            problems.append(("case.assert", "a retrieval case needs at least one [[case.assert]]"))
        return problems


KIND = RetrievalKind()
