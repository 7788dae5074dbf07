"""A tiny suite kind and tool for tests of the loader and runner, independent of shipped suites.

Registered into the real registry through the plugin API by the `echo_suite` fixture
(tests/conftest.py), `tests/echo_cli.py` and the concurrency benchmark.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import ToolDef
from evalctl.plugin import NamedCheck, Registry, ScoringContext, named_checks
from evalctl.results.models import CheckResult
from evalctl.scoring.kinds import RequestShape
from evalctl.tools.base import ToolContext, ToolInputError, ToolOutput


class EchoInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt: str


class EchoExpected(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: str
    tool: str | None = None


def _expected(ctx: ScoringContext) -> EchoExpected:
    assert isinstance(ctx.case.expected, EchoExpected)
    return ctx.case.expected


def _answer(ctx: ScoringContext) -> CheckResult:
    want = _expected(ctx).answer
    return CheckResult(
        name="answer",
        passed=ctx.answer.text.strip() == want,
        expected=want,
        actual=ctx.answer.text,
    )


def _tool(ctx: ScoringContext) -> CheckResult:
    called = [r.name for r in ctx.transcript.tool_calls]
    want = _expected(ctx).tool
    return CheckResult(name="tool", passed=want in called, expected=want, actual=called)


class EchoKind:
    name = "echo"
    input_model = EchoInput
    expected_model = EchoExpected
    checks = named_checks(
        NamedCheck("answer", _answer),
        # Only where the case names a tool: a case without one is not judged on tools.
        NamedCheck("tool", _tool, applies=lambda case: _expected_tool(case) is not None),
    )

    def build_prompt(self, suite: SuiteTable, case: Case, ctx: ToolContext) -> str:
        assert isinstance(case.input, EchoInput)
        return case.input.prompt

    def request_shape(self, suite: SuiteTable, case: Case) -> RequestShape:
        return RequestShape()


def _expected_tool(case: Case) -> str | None:
    assert isinstance(case.expected, EchoExpected)
    return case.expected.tool


class UpperTool:
    definition = ToolDef(
        name="upper",
        description="Upper-cases text.",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
    )

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        text = arguments.get("text")
        if not isinstance(text, str):
            raise ToolInputError("'text' must be a string")
        return ToolOutput(content=text.upper(), data={"length": len(text)})


KIND = EchoKind()
UPPER = UpperTool()


def register(registry: Registry) -> None:
    registry.add_kind("echo", KIND)
    registry.add_tool("upper", UPPER)


def install() -> None:
    """Register the echo plugin into this process's registry (as a test-only plugin)."""
    from evalctl.plugin import Origin
    from evalctl.plugin_loader import registry

    reg = registry()
    reg.current = Origin("evalctl.toml", "tests.echo_kind")
    try:
        register(reg)
    finally:
        reg.current = Origin("builtin", "evalctl")


SUITE_TOML = """
[suite]
name = "echo"
kind = "echo"
system_prompt = "Answer exactly."
tools = ["upper"]
max_turns = 3

[[case]]
id = "hello"
features = ["basic"]
input = { prompt = "say hello" }
expected = { answer = "hello" }

[[case]]
id = "shout"
features = ["tools"]
input = { prompt = "shout hi" }
expected = { answer = "HI", tool = "upper" }
"""
