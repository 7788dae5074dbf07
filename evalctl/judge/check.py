"""The `judge` assertion type: a model grades the case's answer against a rubric.

    [[case.assert]]
    type = "judge"
    rubric = "Apologises once and gives the refund deadline (14 days)."
    provider = "anthropic"        # optional; default: [judge] in evalctl.toml, else the run's
    model = "claude-sonnet-4-6"   # optional
    threshold = 0.7               # optional: graded, passes when the judge's score is >= 0.7

Pass/fail (no `threshold`): the check is `pass` or `fail` on the judge's verdict. Graded: the
judge also scores the answer from 0 to 1, and the check passes when the score reaches the
threshold (its `expected` is `>= 0.7`, its `actual` carries the `score`). Either way the check
is `error` when the judge cannot answer (in graded mode, a reply without a score too). Its
`actual` records the judge (provider/model), the verdict, the reason, the raw reply, the
estimated cost in USD (None when the model has no price) and whether the verdict came from
the cache; `message` holds the reason (or why there is no verdict).

Each judge assertion's request is addressed to it by its check name (`suite/id#judge:<name>`),
so a reply script can answer two judges of one case differently.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalctl.cases.schema import AssertionSpec, Case, SuiteTable
from evalctl.chat import Role
from evalctl.providers.registry import SPECS
from evalctl.results.models import CheckResult
from evalctl.scoring.check import Check, ScoringContext, Transcript
from evalctl.scoring.judging import GradeRequest, Judgement
from evalctl.scoring.score import declared_names

CHECK_NAME = "judge"


class JudgeParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rubric: str = Field(min_length=1)
    provider: str | None = None
    model: str | None = Field(default=None, min_length=1)
    # Set: graded mode, passing at a judge's score of at least this.
    threshold: float | None = Field(default=None, ge=0, le=1, allow_inf_nan=False)

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

    @field_validator("threshold", mode="before")
    @classmethod
    def _threshold_is_a_number(cls, value: Any) -> Any:
        # Pydantic would take `true` as 1.0 and "0.7" as 0.7; in a suite file both are slips.
        if isinstance(value, bool) or not isinstance(value, int | float | None):
            raise ValueError(f"must be a number from 0 to 1, not {value!r}")
        return value


def judge_checks(suite: SuiteTable, case: Case) -> list[tuple[AssertionSpec, str]]:
    """The case's judge assertions, each with the name its result carries
    (evalctl.scoring.score.declared_names)."""
    names = declared_names(suite, case)[-len(case.assertions) :] if case.assertions else []
    return [
        (spec, name)
        for spec, name in zip(case.assertions, names, strict=True)
        if spec.type == CHECK_NAME
    ]


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


def _error(expected: str, message: str, actual: Any = None) -> CheckResult:
    return CheckResult(
        name=CHECK_NAME, status="error", expected=expected, actual=actual, message=message
    )


def _graded(judgement: Judgement, threshold: float, actual: dict[str, Any]) -> CheckResult:
    expected = f">= {threshold:g}"
    score = judgement.score
    if score is None:  # the service refuses a graded reply without one; never a pass
        return _error(expected, "the judge gave no score", actual)
    passed = score >= threshold
    return CheckResult(
        name=CHECK_NAME,
        status="pass" if passed else "fail",
        expected=expected,
        actual=actual,
        message=f"score {score:g} {'>=' if passed else '<'} {threshold:g}: {judgement.reason}",
    )


class JudgeCheck(Check[JudgeParams]):
    """The `judge` assertion type, graded by the run's judge (`ctx.judge`)."""

    type_name = CHECK_NAME
    params_model = JudgeParams

    def evaluate(self, params: JudgeParams, ctx: ScoringContext) -> CheckResult:
        threshold = params.threshold
        expected = params.rubric if threshold is None else f">= {threshold:g}"
        if ctx.judge is None:
            return _error(expected, "no judge in this run (judge checks run in `evalctl run`)")
        judgement = ctx.judge.grade(
            GradeRequest(
                rubric=params.rubric,
                case_input=case_input(ctx.transcript),
                answer=ctx.answer.text,
                case_key=ctx.case.key,
                provider=params.provider,
                model=params.model,
                graded=threshold is not None,
                # A kind's named check that delegates to this type is no assertion: its
                # request stays the case's plain `#judge`.
                check_name=ctx.check_name,
            )
        )
        actual: dict[str, Any] = {"judge": f"{judgement.provider}/{judgement.model}"}
        if threshold is not None:
            actual["score"] = judgement.score
        actual |= {
            "verdict": judgement.verdict,
            "reason": judgement.reason,
            "reply": judgement.reply,
            "cost_usd": judgement.cost_usd,
            "cached": judgement.cached,
        }
        if judgement.error is not None or judgement.verdict is None:
            return _error(expected, judgement.error or "no verdict", actual)
        if threshold is not None:
            return _graded(judgement, threshold, actual)
        return CheckResult(
            name=CHECK_NAME,
            status=judgement.verdict,
            expected=expected,
            actual=actual,
            message=judgement.reason,
        )


CHECK = JudgeCheck()
