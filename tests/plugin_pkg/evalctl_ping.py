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
    Registry,
    RequestShape,
    SuiteTable,
    ToolContext,
    ToolDef,
    ToolInputError,
    ToolOutput,
    Transcript,
)


class PingInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt: str


class PingExpected(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: str
    reversed: str | None = None  # the text the `reverse` tool must have been called with


class PingKind:
    name = "ping"
    input_model = PingInput
    expected_model = PingExpected
    check_names = ("answer", "reversed")

    def build_prompt(self, suite: SuiteTable, case: Case, ctx: ToolContext) -> str:
        assert isinstance(case.input, PingInput)
        return case.input.prompt

    def request_shape(self, suite: SuiteTable, case: Case) -> RequestShape:
        return RequestShape()

    def score(self, case: Case, transcript: Transcript) -> list[CheckResult]:
        assert isinstance(case.expected, PingExpected)
        results = [
            CheckResult(
                name="answer",
                passed=transcript.final_text.strip() == case.expected.answer,
                expected=case.expected.answer,
                actual=transcript.final_text,
            )
        ]
        if case.expected.reversed is not None:
            texts = [c.arguments.get("text") for c in transcript.tool_calls if c.name == "reverse"]
            results.append(
                CheckResult(
                    name="reversed",
                    passed=case.expected.reversed in texts,
                    expected=case.expected.reversed,
                    actual=texts,
                    message="" if case.expected.reversed in texts else "reverse was not called",
                )
            )
        return results


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

    params_model = StartsWithParams

    def evaluate(self, params: BaseModel, transcript: Transcript) -> CheckResult:
        assert isinstance(params, StartsWithParams)
        passed = transcript.final_text.startswith(params.prefix)
        return CheckResult(
            name="starts-with",
            passed=passed,
            expected=params.prefix,
            actual=transcript.final_text[: len(params.prefix)],
            message="" if passed else "the answer starts otherwise",
        )


def register(registry: Registry) -> None:
    registry.add_kind("ping", PingKind)  # a class: a factory, instantiated on first use
    registry.add_tool("reverse", ReverseTool())
    registry.add_check("starts-with", StartsWith)
