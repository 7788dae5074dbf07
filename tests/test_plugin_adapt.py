"""The adapters of evalctl.plugin_adapt: a plugin object that does not inherit its base class
gets the base's defaults for the hooks it lacks, and keeps the ones it has (a kind's legacy
`direct_calls` becoming its `drive()`); an object that inherits is used as it is."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import CompletionRequest, CompletionResponse, ToolCall, ToolDef
from evalctl.embeddings import Embedder, Embeddings
from evalctl.plugin_adapt import adapt_check, adapt_kind, adapt_provider, adapt_tool
from evalctl.providers.base import SAMPLING_PARAMS, Provider
from evalctl.results.models import CheckResult
from evalctl.retrieval.kind import RetrievalKind
from evalctl.scoring.check import NoParams, ScoringContext
from evalctl.scoring.kinds import MODEL_CONVERSATION, RequestShape
from evalctl.tools.base import ToolContext, ToolOutput


class _In(BaseModel):
    prompt: str = ""


def _case() -> Case:
    return Case(
        suite="s",
        id="c",
        description="",
        features=[],
        input=_In(),
        expected=_In(),
        checks=[],
        timeout_s=None,
    )


class PlainKind:
    name = "plain"
    input_model = _In
    expected_model = _In
    checks: dict[str, Any] = {}

    def build_prompt(self, suite: SuiteTable, case: Case, ctx: ToolContext) -> str:
        return "hi"

    def request_shape(self, suite: SuiteTable, case: Case) -> RequestShape:
        return RequestShape()


class LegacyModelFreeKind(PlainKind):
    reads_tool_choice = True

    def direct_calls(self, suite: SuiteTable, case: Case) -> list[ToolCall]:
        return [ToolCall(id="own", name="lookup", arguments={})]

    def case_problems(
        self, suite: SuiteTable, case: Case, suite_dir: Path
    ) -> list[tuple[str, str]]:
        return [("case.input", "no")]


def test_a_plain_kind_gets_the_defaults() -> None:
    kind = adapt_kind(PlainKind())
    table = SuiteTable(name="s", kind="plain")
    case = _case()
    assert kind.drive(table, case) is MODEL_CONVERSATION
    assert kind.drive(table, case).driven_by == "model"
    assert kind.case_problems(table, case, Path()) == []
    assert kind.reads_tool_choice is False
    kind.link_cases(table, [case])  # a no-op, not a missing attribute


def test_a_legacy_model_free_kind_drives_its_case_with_its_calls() -> None:
    kind = adapt_kind(LegacyModelFreeKind())
    table = SuiteTable(name="s", kind="plain")
    case = _case()
    drive = kind.drive(table, case)
    assert drive.driven_by == "tools"
    assert [c.name for c in drive.calls or []] == ["lookup"]
    assert kind.case_problems(table, case, Path()) == [("case.input", "no")]
    assert kind.reads_tool_choice is True


def test_a_kind_that_inherits_is_used_as_it_is() -> None:
    kind = RetrievalKind()
    assert adapt_kind(kind) is kind


class PlainCheck:
    type_name = "plain"
    params_model = NoParams

    def evaluate(self, params: NoParams, ctx: ScoringContext) -> CheckResult:
        return CheckResult(name="plain", passed=True)


def test_a_plain_check_gets_the_defaults() -> None:
    check = adapt_check(PlainCheck())
    params = NoParams()
    assert check.default_name(params) == "plain"
    assert check.tools_named(params) == []
    assert check.arguments_named(params) == []
    assert check.cases_named(params) == []
    assert check.applies(_case()) is True


class PlainProvider:
    name = "plain"
    model = "plain-1"

    def __init__(self) -> None:
        self.closed = False

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        return CompletionResponse(content="ok", model=self.model)

    def close(self) -> None:
        self.closed = True


class EmbeddingProvider(PlainProvider):
    capabilities = frozenset({"embeddings"})
    sampling_params = frozenset({"temperature"})

    def embed(self, texts: Any, *, timeout: float) -> Embeddings:
        return Embeddings(vectors=[[1.0] for _ in texts], model=self.model)


def test_a_plain_provider_gets_the_defaults_and_keeps_its_own() -> None:
    inner = PlainProvider()
    provider = adapt_provider(inner)
    assert isinstance(provider, Provider)
    assert provider.model == "plain-1" and provider.model_sha256 is None
    assert provider.capabilities == frozenset()
    assert provider.sampling_params == SAMPLING_PARAMS
    assert provider.run_settings() == {} and provider.platform_info() == {}
    assert provider.measured_speed() is None
    assert provider.has_daemon is False
    assert not isinstance(provider, Embedder)
    provider.close()
    assert inner.closed


def test_a_provider_that_embeds_still_embeds_once_adapted() -> None:
    provider = adapt_provider(EmbeddingProvider())
    assert provider.sampling_params == frozenset({"temperature"})
    assert isinstance(provider, Embedder)
    assert provider.embed(["a", "b"], timeout=1).vectors == [[1.0], [1.0]]


class PlainTool:
    definition = ToolDef(name="plain", description="", parameters={"type": "object"})

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        return ToolOutput(content="ok")


def test_a_plain_tool_reads_its_arguments_strictly_by_default() -> None:
    tool = adapt_tool(PlainTool())
    assert tool.lenient_arguments is False
    assert tool.definition.name == "plain"
