"""The one check base class: what a suite kind's named checks, the built-in assertion types,
the `judge` and a plugin's assertion types all are, and the context they judge.

A check class names its `type_name` (what `[[case.assert]] type = "..."` says; for a kind's
named check, the check's name) and its `params_model` (a pydantic model of its parameters,
`extra="forbid"`), and `evaluate(params, ctx)` returns one `CheckResult` with expected,
actual and, on a failure, why. Optional methods, with their defaults on the `Check` base:

- `default_name(params) -> str`: the check's name when a case gives none (else `type_name`);
- `tools_named(params) -> [(key, tool)]`, `arguments_named(params) -> [(key, tool, arg)]`,
  `cases_named(params) -> [(key, case id)]`: tools, tool arguments and other cases of the
  suite the parameters name, so the suite loader can check them;
- `applies(case) -> bool`: False leaves a kind's named check out of this case altogether
  (an optional field its ground truth does not set), where `n/a` would still list it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict

from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import CompletionResponse, Message, Usage
from evalctl.embeddings import Embedder
from evalctl.results.models import CheckResult, ToolCallRecord
from evalctl.scoring.answer import Answer, read_answer
from evalctl.scoring.judging import JudgeService
from evalctl.tools.base import ToolContext

P = TypeVar("P", bound=BaseModel)


@dataclass(frozen=True)
class Transcript:
    """What the conversation of one case was: every message, every reply, every tool call as
    it really ran."""

    messages: list[Message]
    responses: list[CompletionResponse]
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    # The answer where no model replied: a model-free kind's (retrieval's) tool result.
    answer: str | None = None

    @property
    def final_text(self) -> str:
        if self.responses:
            return self.responses[-1].content
        return self.answer or ""


@dataclass(frozen=True)
class ScoringContext:
    """Everything a check may judge: the case and its suite, the transcript, the one reading
    of the final answer (evalctl.scoring.answer), and the run's services."""

    case: Case
    suite: SuiteTable
    transcript: Transcript
    answer: Answer
    # None outside `evalctl run` (a check then says it has no judge).
    judge: JudgeService | None = None
    # The suite's opened resources (`requires`), by name.
    resources: Mapping[str, Any] = field(default_factory=dict)
    # The case's tool context (fixtures directory, settings); None outside a run.
    tools: ToolContext | None = None
    # How long the attempt had run when it was scored; None outside a run.
    latency_ms: float | None = None
    # The tokens of every request of the attempt, summed; None outside a run.
    usage: Usage | None = None
    # The attempt's estimated cost (evalctl.cost); None where the provider is not billed or
    # the model has no price.
    cost_usd: float | None = None
    # The name this check's result carries (a declared assertion's, `... #2` for a second of
    # one name: evalctl.scoring.score.declared_names); None for a kind's named checks.
    check_name: str | None = None
    # The run's embedding provider, for `similar`; None outside a run or where it has none.
    embedder: Embedder | None = None


class Check(ABC, Generic[P]):
    """The base of a check (see the module docstring): `type_name` and `params_model` are
    required (class attributes, usually), `evaluate` is abstract, and every optional hook is
    a method with its default here. A plugin's check that does not inherit is adapted once,
    when it is registered (evalctl.plugin_adapt)."""

    # What `[[case.assert]] type = "..."` says; for a kind's named check, the check's name.
    type_name: str
    # A pydantic model of its parameters, `extra="forbid"`.
    params_model: type[P]

    @abstractmethod
    def evaluate(self, params: P, ctx: ScoringContext) -> CheckResult:
        """One result, with expected, actual and, on a failure, why."""

    def default_name(self, params: P) -> str:
        """The check's name when a case gives none. Default: `type_name`."""
        return self.type_name

    def tools_named(self, params: P) -> list[tuple[str, str]]:
        """(key, tool) pairs the parameters refer to, for the loader. Default: none."""
        return []

    def arguments_named(self, params: P) -> list[tuple[str, str, str]]:
        """(key, tool, argument) triples the parameters expect, for the loader. Default:
        none."""
        return []

    def cases_named(self, params: P) -> list[tuple[str, str]]:
        """(key, case id) pairs of other cases of the suite the parameters refer to, for the
        loader. Default: none."""
        return []

    def applies(self, case: Case) -> bool:
        """False leaves a kind's named check out of this case altogether. Default: True."""
        return True


class NoParams(BaseModel):
    """The parameters of a check that takes none (a suite kind's named checks)."""

    model_config = ConfigDict(extra="forbid")


class NamedCheck(Check[NoParams]):
    """A suite kind's named check from a function of the context: `NamedCheck("format",
    check_format)`. `applies`, when given, leaves the check out of cases it is False for."""

    params_model = NoParams

    def __init__(
        self,
        name: str,
        judge: Callable[[ScoringContext], CheckResult],
        *,
        applies: Callable[[Case], bool] | None = None,
    ):
        self.type_name = name
        self._judge = judge
        self._applies = applies

    def evaluate(self, params: NoParams, ctx: ScoringContext) -> CheckResult:
        return self._judge(ctx)

    def applies(self, case: Case) -> bool:
        return self._applies is None or self._applies(case)


def named_checks(*checks: NamedCheck) -> dict[str, Check[Any]]:
    """A kind's `checks` mapping, in report order."""
    return {check.type_name: check for check in checks}


def scoring_context(
    case: Case,
    suite: SuiteTable,
    transcript: Transcript,
    *,
    judge: JudgeService | None = None,
    resources: Mapping[str, Any] | None = None,
    tools: ToolContext | None = None,
    latency_ms: float | None = None,
    usage: Usage | None = None,
    cost_usd: float | None = None,
    embedder: Embedder | None = None,
) -> ScoringContext:
    """The context of one transcript, its final answer read once (evalctl.scoring.answer)."""
    return ScoringContext(
        case=case,
        suite=suite,
        transcript=transcript,
        answer=read_answer(transcript.final_text),
        judge=judge,
        resources=resources if resources is not None else {},
        tools=tools,
        latency_ms=latency_ms,
        usage=usage,
        cost_usd=cost_usd,
        embedder=embedder,
    )
