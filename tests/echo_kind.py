"""A tiny suite kind and tool for tests of the loader and runner, independent of shipped suites.

Registered into the real registry through the plugin API by the `echo_suite` fixture
(tests/conftest.py), `tests/echo_cli.py` and the concurrency benchmark.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import ToolDef
from evalctl.plugin import Registry
from evalctl.results.models import CheckResult
from evalctl.scoring.kinds import RequestShape, Transcript
from evalctl.tools.base import ToolContext, ToolInputError, ToolOutput


class EchoInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt: str


class EchoExpected(BaseModel):
    model_config = ConfigDict(extra="forbid")
    answer: str
    tool: str | None = None


class EchoKind:
    name = "echo"
    input_model = EchoInput
    expected_model = EchoExpected
    check_names = ("answer", "tool")

    def build_prompt(self, suite: SuiteTable, case: Case, ctx: ToolContext) -> str:
        assert isinstance(case.input, EchoInput)
        return case.input.prompt

    def request_shape(self, suite: SuiteTable, case: Case) -> RequestShape:
        return RequestShape()

    def score(self, case: Case, transcript: Transcript) -> list[CheckResult]:
        assert isinstance(case.expected, EchoExpected)
        checks = [
            CheckResult(
                name="answer",
                passed=transcript.final_text.strip() == case.expected.answer,
                expected=case.expected.answer,
                actual=transcript.final_text,
            )
        ]
        if "tool" in case.checks and case.expected.tool is not None:
            called = [r.name for r in transcript.tool_calls]
            checks.append(
                CheckResult(
                    name="tool",
                    passed=case.expected.tool in called,
                    expected=case.expected.tool,
                    actual=called,
                )
            )
        return checks


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
