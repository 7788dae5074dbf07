"""The `judge` assertion type: a model grades the case's answer against a rubric.

    [[case.assert]]
    type = "judge"
    rubric = "Apologises once and gives the refund deadline (14 days)."
    provider = "anthropic"        # optional; default: [judge] in evalctl.toml, else the run's
    model = "claude-sonnet-4-6"   # optional

The check is `pass` or `fail` on the judge's verdict, and `error` when the judge cannot
answer. Its `actual` records the judge (provider/model), the verdict, the reason, the raw
reply, the estimated cost in USD (None when the model has no price) and whether the verdict
came from the cache; `message` holds the reason (or why there is no verdict).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalctl.chat import Role
from evalctl.providers.registry import SPECS
from evalctl.results.models import CheckResult
from evalctl.scoring.check import ScoringContext, Transcript
from evalctl.scoring.judging import GradeRequest

CHECK_NAME = "judge"


class JudgeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rubric: str = Field(min_length=1)
    provider: str | None = None
    model: str | None = Field(default=None, min_length=1)

    @field_validator("rubric")
    @classmethod
    def _rubric_says_something(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the rubric is empty")
        return value

    @field_validator("provider")
    @classmethod
    def _known_provider(cls, value: str | None) -> str | None:
        if value is not None and value not in SPECS:
            raise ValueError(f"unknown provider {value!r} (choose from {', '.join(SPECS)})")
        return value


def case_input(transcript: Transcript) -> str:
    """What the model was asked: the conversation before its first reply, system prompt left
    out; one `role: text` paragraph per message when there is more than one."""
    messages = transcript.messages
    if transcript.responses:
        first_reply = transcript.responses[0].as_message()
        messages = messages[: next((i for i, m in enumerate(messages) if m == first_reply), None)]
    opening = [m for m in messages if m.role is not Role.SYSTEM]
    if len(opening) == 1:
        return opening[0].content
    return "\n\n".join(f"{m.role.value}: {m.content}" for m in opening)


def _error(rubric: str, message: str, actual: Any = None) -> CheckResult:
    return CheckResult(
        name=CHECK_NAME, status="error", expected=rubric, actual=actual, message=message
    )


class JudgeCheck:
    """The `judge` assertion type, graded by the run's judge (`ctx.judge`)."""

    type_name = CHECK_NAME
    params_model = JudgeParams

    def evaluate(self, params: JudgeParams, ctx: ScoringContext) -> CheckResult:
        if ctx.judge is None:
            return _error(params.rubric, "no judge in this run (judge checks run in `evalctl run`)")
        judgement = ctx.judge.grade(
            GradeRequest(
                rubric=params.rubric,
                case_input=case_input(ctx.transcript),
                answer=ctx.answer.text,
                case_key=ctx.case.key,
                provider=params.provider,
                model=params.model,
            )
        )
        actual = {
            "judge": f"{judgement.provider}/{judgement.model}",
            "verdict": judgement.verdict,
            "reason": judgement.reason,
            "reply": judgement.reply,
            "cost_usd": judgement.cost_usd,
            "cached": judgement.cached,
        }
        if judgement.error is not None or judgement.verdict is None:
            return _error(params.rubric, judgement.error or "no verdict", actual)
        return CheckResult(
            name=CHECK_NAME,
            status=judgement.verdict,
            expected=params.rubric,
            actual=actual,
            message=judgement.reason,
        )


CHECK = JudgeCheck()
