"""A test-only kind whose one named check is the `judge` assertion type, so judge checks run
through the real runner (the run's judge, retries, case status) independently of any other
kind."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from evalctl.cases.schema import Case, SuiteTable
from evalctl.plugin import NamedCheck, ScoringContext, named_checks
from evalctl.plugin_loader import get_check, registry
from evalctl.results.models import CheckResult
from evalctl.scoring.kinds import RequestShape
from evalctl.tools.base import ToolContext

RUBRIC = "Says hello."


class JudgedInput(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt: str


class JudgedExpected(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rubric: str
    provider: str | None = None
    model: str | None = None


class JudgedKind:
    name = "judged"
    input_model = JudgedInput
    expected_model = JudgedExpected
    checks = named_checks(NamedCheck("judge", lambda ctx: _judge(ctx)))

    def build_prompt(self, suite: SuiteTable, case: Case, ctx: ToolContext) -> str:
        assert isinstance(case.input, JudgedInput)
        return case.input.prompt

    def request_shape(self, suite: SuiteTable, case: Case) -> RequestShape:
        return RequestShape()


def _judge(ctx: ScoringContext) -> CheckResult:
    assert isinstance(ctx.case.expected, JudgedExpected)
    check = get_check("judge")  # the registered assertion type, as the assert kind gets it
    assert check is not None
    params = check.params_model.model_validate(ctx.case.expected.model_dump(exclude_none=True))
    return check.evaluate(params, ctx)


def install() -> None:
    registry().add_kind("judged", JudgedKind())


def write_suite(directory: Path, expected: str = f'{{ rubric = "{RUBRIC}" }}') -> Path:
    path = directory / "judged.toml"
    path.write_text(
        "\n".join(
            [
                "[suite]",
                'name = "judged"',
                'kind = "judged"',
                'system_prompt = "Be brief."',
                "",
                "[[case]]",
                'id = "greet"',
                'input = { prompt = "Greet me." }',
                f"expected = {expected}",
            ]
        )
        + "\n"
    )
    return path


def verdict(verdict: str, reason: str = "it does") -> str:
    """A judge reply in the fixed schema, as a TOML string value."""
    return "'" + f'{{"reason": "{reason}", "verdict": "{verdict}"}}' + "'"


def script(path: Path, judge_reply: str, answer: str = "Hello!") -> Path:
    """A scripted-provider script: the case's answer, and the judge's reply to it."""
    path.write_text(
        f'[[cases."judged/greet"]]\ncontent = "{answer}"\n\n'
        f'[[cases."judged/greet#judge"]]\n{judge_reply}\n'
    )
    return path
