"""A third-party plugin as a user would write one, for tests/test_plugins.py: a `ping` suite
kind, a `reverse` tool and a `starts-with` check, written only against `evalctl.plugin`.

Tests load it through an entry point (a `*.dist-info` they write next to it) and through
`plugins = ["evalctl_ping"]` in an `evalctl.toml`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from evalctl.plugin import (
    Case,
    CheckResult,
    NamedCheck,
    Registry,
    RequestShape,
    ScoringContext,
    SuiteTable,
    ToolContext,
    ToolDef,
    ToolInputError,
    ToolOutput,
    named_checks,
)


class PingInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt: str


class PingExpected(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: str
    reversed: str | None = None  # the text the `reverse` tool must have been called with


def _expected(ctx: ScoringContext) -> PingExpected:
    assert isinstance(ctx.case.expected, PingExpected)
    return ctx.case.expected


def _answer(ctx: ScoringContext) -> CheckResult:
    want = _expected(ctx).answer
    passed = ctx.answer.text.strip() == want
    return CheckResult(
        name="answer", status="pass" if passed else "fail", expected=want, actual=ctx.answer.text
    )


def _reversed(ctx: ScoringContext) -> CheckResult:
    want = _expected(ctx).reversed
    texts = [c.arguments.get("text") for c in ctx.transcript.tool_calls if c.name == "reverse"]
    passed = want in texts
    return CheckResult(
        name="reversed",
        status="pass" if passed else "fail",
        expected=want,
        actual=texts,
        message="" if passed else "reverse was not called",
    )


def _names_reversed(case: Case) -> bool:
    assert isinstance(case.expected, PingExpected)
    return case.expected.reversed is not None


class PingKind:
    name = "ping"
    input_model = PingInput
    expected_model = PingExpected
    # Named checks: `reversed` only for cases that expect a reversal.
    checks = named_checks(
        NamedCheck("answer", _answer), NamedCheck("reversed", _reversed, applies=_names_reversed)
    )

    def build_prompt(self, suite: SuiteTable, case: Case, ctx: ToolContext) -> str:
        assert isinstance(case.input, PingInput)
        return case.input.prompt

    def request_shape(self, suite: SuiteTable, case: Case) -> RequestShape:
        return RequestShape()


class ReverseTool:
    definition = ToolDef(
        name="reverse",
        description="Reverses a text.",
        parameters={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    )

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        text = arguments.get("text")
        if not isinstance(text, str):
            raise ToolInputError("'text' must be a string")
        return ToolOutput(content=text[::-1], data={"plugin": "evalctl_ping"})


class StartsWithParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prefix: str


class StartsWith:
    """An assertion type: the answer starts with `prefix`."""

    type_name = "starts-with"
    params_model = StartsWithParams

    def evaluate(self, params: StartsWithParams, ctx: ScoringContext) -> CheckResult:
        passed = ctx.answer.text.startswith(params.prefix)
        return CheckResult(
            name=self.type_name,
            status="pass" if passed else "fail",
            expected=params.prefix,
            actual=ctx.answer.text[: len(params.prefix)],
            message="" if passed else "the answer starts otherwise",
        )


def register(registry: Registry) -> None:
    registry.add_kind("ping", PingKind)  # a class: a factory, instantiated on first use
    registry.add_tool("reverse", ReverseTool())
    registry.add_check("starts-with", StartsWith)
