"""A test-only kind whose one named check is the `judge` assertion type, so judge checks run
through the real runner (the run's judge, retries, case status) independently of any other
kind; and an `assert` suite with judge assertions, its reply scripts, and a run of it."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from evalctl.cases.schema import Case, SuiteTable
from evalctl.config import Settings
from evalctl.plugin import NamedCheck, ScoringContext, named_checks
from evalctl.plugin_loader import get_check, registry
from evalctl.providers.base import Provider
from evalctl.providers.scripted import ScriptedProvider, load_script
from evalctl.results.models import CaseResult, CheckResult
from evalctl.retry import RetryPolicy
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from evalctl.scoring.kinds import RequestShape
from evalctl.tools.base import ToolContext

RUBRIC = "Says hello."
REFUND_ANSWER = "Yes: a full refund within 14 days of purchase."


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


def graded(score: object, verdict: str = "pass", reason: str = "it does") -> str:
    """A graded judge reply (the fixed schema with a score), as a TOML string value; `score`
    goes in as written (`0.8`, `"high"`, ...)."""
    body = f'{{"reason": "{reason}", "score": {json.dumps(score)}, "verdict": "{verdict}"}}'
    return "'" + body + "'"


def assert_suite(directory: Path, *assertions: str, defaults: str = "") -> Path:
    """An `assert` suite with one case, `support/refund`, whose `[[case.assert]]` tables are
    `assertions` (TOML bodies); `defaults`, when given, is the body of `[suite.defaults]`."""
    path = directory / "support.toml"
    tables = "".join(f"\n[[case.assert]]\n{body}\n" for body in assertions)
    path.write_text(
        "[suite]\n"
        'name = "support"\n'
        'kind = "assert"\n'
        'system_prompt = "You answer customer emails."\n'
        + (f"\n[suite.defaults]\n{defaults}\n" if defaults else "")
        + "\n[[case]]\n"
        'id = "refund"\n'
        'input = { prompt = "Can I still return the kettle I bought last week?" }\n' + tables
    )
    return path


def reply_script(path: Path, replies: dict[str, str], answer: str = REFUND_ANSWER) -> Path:
    """A script answering `support/refund` with `answer`, and each key of `replies` (a script
    key such as `support/refund#judge:tone`) with its reply (TOML body)."""
    text = f'[[cases."support/refund"]]\ncontent = "{answer}"\n'
    for key, body in replies.items():
        text += f'\n[[cases."{key}"]]\n{body}\n'
    path.write_text(text)
    return path


class ModelStandIn(ScriptedProvider):
    """Replies from a script under a name no provider is registered by, so the judge cache
    takes it for a model: the registered stand-in, `scripted`, is never cached, since its
    script may change between runs."""

    name = "model-stand-in"


def model_stand_in(script_path: Path) -> ModelStandIn:
    return ModelStandIn(load_script(script_path))


def home_settings() -> Settings:
    """Settings whose home is the test's EVALCTL_HOME (where the judge cache lives)."""
    return Settings(home=Path(os.environ["EVALCTL_HOME"]))


def run_case(
    suite: Path,
    out: Path,
    script_path: Path,
    *,
    judge_cache: bool = True,
    provider: Provider | None = None,
) -> CaseResult:
    """The suite's one case, run by the scripted provider on `script_path` (or by `provider`,
    a scripted provider the test keeps to read its requests back)."""
    request = RunRequest(
        provider="scripted",
        script=script_path,
        paths=[suite],
        out_dir=out,
        show_progress=False,
        judge_cache=judge_cache,
    )
    retry = RetryPolicy(max_attempts=3, sleep=lambda _s: None, rng=random.Random(0))
    outcome = execute_run(request, home_settings(), {}, provider_override=provider, retry=retry)
    [case] = outcome.result.cases
    return case
