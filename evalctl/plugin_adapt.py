"""The one place duck typing lives: a plugin's object that does not inherit its extension
point's base class is adapted here, once, when the registry first resolves it.

Each base class (`SuiteKind` in evalctl.scoring.kinds, and so on) declares its required
members abstract and every optional hook as a method with a default, so the rest of evalctl
calls hooks directly and mypy checks every call. A plugin written before the base classes
(or one that prefers plain duck typing) still works: its required members are read here, its
optional hooks are probed by name here, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evalctl.cases.schema import Case, Suite, SuiteTable
from evalctl.chat import CompletionRequest, CompletionResponse, Message, ToolCall, ToolDef
from evalctl.embeddings import Embeddings
from evalctl.errors import BadInputError
from evalctl.providers.base import SAMPLING_PARAMS, Provider, Speed
from evalctl.providers.registry import ProviderFactory, ProviderOptions
from evalctl.results.models import CheckResult
from evalctl.scoring.check import Check, ScoringContext
from evalctl.scoring.judging import GradeRequest, JudgeFactory, Judgement, JudgeService, JudgeSetup
from evalctl.scoring.kinds import MODEL_CONVERSATION, Drive, RequestShape, SuiteKind
from evalctl.tools.base import Tool, ToolContext, ToolOutput


def has_shape(value: Any, attributes: tuple[str, ...]) -> bool:
    """Whether `value` is the thing itself (it has `attributes`) rather than a factory of
    one. A class has its methods as attributes too: only instances count."""
    return not isinstance(value, type) and all(hasattr(value, a) for a in attributes)


def defined_name(tool: Any, default: str) -> str:
    """The name a tool's `definition` gives it (`default` where it gives none)."""
    return str(getattr(getattr(tool, "definition", None), "name", default))


def adapt_kind(value: Any) -> SuiteKind:
    """`value` as a `SuiteKind`: itself when it inherits the base, else wrapped once."""
    return value if isinstance(value, SuiteKind) else _AdaptedKind(value)


class _AdaptedKind(SuiteKind):
    """A duck-typed kind behind the base class: required members forwarded, optional hooks
    probed by name once (a legacy `direct_calls(suite, case)` becomes `drive()`)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.name: str = inner.name
        self.input_model: type[BaseModel] = inner.input_model
        self.expected_model: type[BaseModel] = inner.expected_model
        self.checks: Mapping[str, Check[Any]] = {
            name: adapt_check(check) for name, check in inner.checks.items()
        }
        self.reads_tool_choice = bool(getattr(inner, "reads_tool_choice", False))
        self._direct_calls = getattr(inner, "direct_calls", None)
        self._link_cases = getattr(inner, "link_cases", None)
        self._case_problems = getattr(inner, "case_problems", None)
        self._drive = getattr(inner, "drive", None)

    def build_prompt(self, suite: SuiteTable, case: Case, ctx: ToolContext) -> str | list[Message]:
        built: str | list[Message] = self._inner.build_prompt(suite, case, ctx)
        return built

    def request_shape(self, suite: SuiteTable, case: Case) -> RequestShape:
        shape: RequestShape = self._inner.request_shape(suite, case)
        return shape

    def drive(self, suite: SuiteTable, case: Case) -> Drive:
        if self._drive is not None:
            drive: Drive = self._drive(suite, case)
            return drive
        if self._direct_calls is not None:
            calls: list[ToolCall] = list(self._direct_calls(suite, case))
            return Drive(calls=calls)
        return MODEL_CONVERSATION

    def link_cases(self, suite: SuiteTable, cases: list[Case]) -> None:
        if self._link_cases is not None:
            self._link_cases(suite, cases)

    def case_problems(
        self, suite: SuiteTable, case: Case, suite_dir: Path
    ) -> list[tuple[str, str]]:
        if self._case_problems is None:
            return []
        return list(self._case_problems(suite, case, suite_dir))


def adapt_judge(value: Any) -> JudgeService:
    """`value` as a `JudgeService`: itself when it inherits the base, else wrapped."""
    return value if isinstance(value, JudgeService) else _AdaptedJudge(value)


def adapted_judge_factory(factory: JudgeFactory) -> JudgeFactory:
    """A judge factory whose judges are `JudgeService`s, adapted where they do not inherit."""

    def make(setup: JudgeSetup) -> JudgeService:
        return adapt_judge(factory(setup))

    return make


class _AdaptedJudge(JudgeService):
    """A duck-typed judge behind the base class, its optional hooks probed once."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._close = getattr(inner, "close", None)
        self._script_problems = getattr(inner, "script_problems", None)

    def grade(self, request: GradeRequest) -> Judgement:
        judgement: Judgement = self._inner.grade(request)
        return judgement

    def close(self) -> None:
        if self._close is not None:
            self._close()

    def script_problems(
        self, script: Path, suites: Sequence[Suite], run_provider: str | None = None
    ) -> list[BadInputError]:
        if self._script_problems is None:
            return []
        return list(self._script_problems(script, suites, run_provider))


def adapt_provider(value: Any) -> Provider:
    """`value` as a `Provider`: itself when it inherits the base, else wrapped (with
    `embed()` forwarded where it has one)."""
    if isinstance(value, Provider):
        return value
    if callable(getattr(value, "embed", None)):
        return _AdaptedEmbeddingProvider(value)
    return _AdaptedProvider(value)


@dataclass(frozen=True)
class ProviderTraits:
    """A provider's traits as data, for a plugin provider whose class does not carry them
    (one written before the classes did, or a plain factory function): `add_provider(name,
    factory, ProviderTraits(...))`. Each field means the `Provider` class attribute or class
    method of the same name; `traits_class` makes them one, the only form the rest of
    evalctl reads."""

    summary: str = ""
    # None: it always can run.
    unavailable_reason: Callable[[ProviderOptions], str | None] | None = None
    capabilities: frozenset[str] = frozenset()
    concurrent: bool = False
    billed: bool = False
    real: bool = True
    deterministic: bool = False
    detect_env: tuple[str, ...] = ()
    # None: nothing known.
    describe: Callable[[ProviderOptions], str] | None = None
    # None: nothing to check.
    check_given: Callable[[ProviderOptions], None] | None = None
    replays_script: bool = False
    application: bool = False


def traits_class(name: str, traits: ProviderTraits) -> type[Provider]:
    """A `Provider` class whose class attributes and class methods are `traits`: what the
    registry reads of every provider. Never built (the plugin's factory builds the
    provider); a hook left None keeps `Provider`'s default."""
    namespace: dict[str, Any] = {"name": name, "__module__": __name__}
    for field in fields(traits):
        value = getattr(traits, field.name)
        if field.name in ("unavailable_reason", "describe", "check_given"):
            if value is not None:
                namespace[field.name] = classmethod(_call_with_options(value))
        else:
            namespace[field.name] = frozenset(value) if field.name == "capabilities" else value
    made = type(f"{name}_traits", (Provider,), namespace)
    assert issubclass(made, Provider)
    return made


def _call_with_options(hook: Callable[[ProviderOptions], Any]) -> Callable[..., Any]:
    def call(cls: type[Provider], options: ProviderOptions) -> Any:
        return hook(options)

    return call


def adapted_provider_factory(factory: ProviderFactory) -> ProviderFactory:
    """A provider factory whose providers are `Provider`s, adapted where they do not inherit."""

    def make(options: ProviderOptions) -> Provider:
        return adapt_provider(factory(options))

    return make


class _AdaptedProvider(Provider):
    """A duck-typed provider behind the base class: its optional hooks probed once. What
    else it has (a test's recorded calls) stays reachable through attribute access."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.name = inner.name
        self.capabilities = frozenset(getattr(inner, "capabilities", frozenset()))
        self._sampling = frozenset(getattr(inner, "sampling_params", SAMPLING_PARAMS))
        self._close = getattr(inner, "close", None)
        self._run_settings = getattr(inner, "run_settings", None)
        self._platform_info = getattr(inner, "platform_info", None)
        self._measured_speed = getattr(inner, "measured_speed", None)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)

    @property
    def model(self) -> str:
        return str(self._inner.model)

    @property
    def model_sha256(self) -> str | None:
        sha: str | None = getattr(self._inner, "model_sha256", None)
        return sha

    @property
    def sampling_params(self) -> frozenset[str]:
        return self._sampling

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        response: CompletionResponse = self._inner.complete(request, timeout=timeout)
        return response

    def close(self) -> None:
        if callable(self._close):
            self._close()

    def run_settings(self) -> dict[str, Any]:
        return dict(self._run_settings()) if callable(self._run_settings) else {}

    def platform_info(self) -> dict[str, Any]:
        return dict(self._platform_info()) if callable(self._platform_info) else {}

    def measured_speed(self) -> Speed | None:
        speed = self._measured_speed() if callable(self._measured_speed) else None
        return speed if isinstance(speed, Speed) else None


class _AdaptedEmbeddingProvider(_AdaptedProvider):
    """An adapted provider that has `embed()` (an `Embedder` too)."""

    def embed(self, texts: Sequence[str], *, timeout: float) -> Embeddings:
        embeddings: Embeddings = self._inner.embed(texts, timeout=timeout)
        return embeddings


def adapt_check(value: Any) -> Check[Any]:
    """`value` as a `Check`: itself when it inherits the base, else wrapped once."""
    return value if isinstance(value, Check) else _AdaptedCheck(value)


class _AdaptedCheck(Check[Any]):
    """A duck-typed check behind the base class, its optional hooks probed once."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.type_name = inner.type_name
        self.params_model = inner.params_model
        self._default_name = getattr(inner, "default_name", None)
        self._tools_named = getattr(inner, "tools_named", None)
        self._arguments_named = getattr(inner, "arguments_named", None)
        self._cases_named = getattr(inner, "cases_named", None)
        self._applies = getattr(inner, "applies", None)

    def evaluate(self, params: Any, ctx: ScoringContext) -> CheckResult:
        result: CheckResult = self._inner.evaluate(params, ctx)
        return result

    def default_name(self, params: Any) -> str:
        return str(self._default_name(params)) if callable(self._default_name) else self.type_name

    def tools_named(self, params: Any) -> list[tuple[str, str]]:
        return list(self._tools_named(params)) if callable(self._tools_named) else []

    def arguments_named(self, params: Any) -> list[tuple[str, str, str]]:
        return list(self._arguments_named(params)) if callable(self._arguments_named) else []

    def cases_named(self, params: Any) -> list[tuple[str, str]]:
        return list(self._cases_named(params)) if callable(self._cases_named) else []

    def applies(self, case: Case) -> bool:
        return not callable(self._applies) or bool(self._applies(case))


def adapt_tool(value: Any) -> Tool:
    """`value` as a `Tool`: itself when it inherits the base, else wrapped once."""
    return value if isinstance(value, Tool) else _AdaptedTool(value)


class _AdaptedTool(Tool):
    """A duck-typed tool behind the base class, its optional hook probed once."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.definition: ToolDef = inner.definition
        self.lenient_arguments = bool(getattr(inner, "lenient_arguments", False))

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        output: ToolOutput = self._inner.run(arguments, ctx)
        return output
