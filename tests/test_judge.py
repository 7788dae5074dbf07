"""The `judge` assertion type: verdicts, the cache, judges that cannot answer, and judges on
the cloud providers (real SDKs against the fake server)."""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from evalctl.config import JudgeSettings, Settings
from evalctl.fakes.llm_server import FakeLLMServer, RecordedRequest, Step
from evalctl.judge.cache import CachedJudgement, JudgeCache, cache_key
from evalctl.judge.check import JudgeParams
from evalctl.judge.prompt import VERDICT_SCHEMA, parse_verdict
from evalctl.results.models import CaseResult, CheckResult
from evalctl.retry import RetryPolicy
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from tests import judge_helpers
from tests.cli_helpers import run_cli
from tests.cloud_helpers import ANTHROPIC_KEY, GOOGLE_KEY, OPENAI_KEY
from tests.judge_helpers import RUBRIC, script, verdict, write_suite

NO_SLEEP = RetryPolicy(max_attempts=3, sleep=lambda _s: None, rng=random.Random(0))


@pytest.fixture(autouse=True)
def judged_kind() -> None:
    judge_helpers.install()


def run(
    suite: Path,
    out: Path,
    *,
    script_path: Path | None = None,
    settings: Settings | None = None,
    env: dict[str, str] | None = None,
    judge_cache: bool = True,
) -> CaseResult:
    request = RunRequest(
        provider="scripted",
        script=script_path,
        paths=[suite],
        out_dir=out,
        show_progress=False,
        judge_cache=judge_cache,
    )
    outcome = execute_run(request, settings or home_settings(), env or {}, retry=NO_SLEEP)
    [case] = outcome.result.cases
    return case


def home_settings(**fields: Any) -> Settings:
    """Settings whose home is the test's EVALCTL_HOME (where the judge cache lives)."""
    return Settings(home=Path(os.environ["EVALCTL_HOME"]), **fields)


def judge_check(case: CaseResult) -> CheckResult:
    [check] = [c for c in case.checks if c.name == "judge"]
    return check


# -- verdicts through a whole run (the scripted provider answers and judges) -------------


def test_a_pass_verdict_passes_and_is_recorded(tmp_path: Path) -> None:
    suite = write_suite(tmp_path)
    case = run(
        suite,
        tmp_path / "out",
        script_path=script(tmp_path / "s.toml", f"content = {verdict('pass', 'it greets')}"),
    )
    assert case.status == "pass"
    check = judge_check(case)
    assert (check.status, check.expected, check.message) == ("pass", RUBRIC, "it greets")
    assert check.actual == {
        "judge": "scripted/scripted",
        "verdict": "pass",
        "reason": "it greets",
        "reply": '{"reason": "it greets", "verdict": "pass"}',
        "cost_usd": None,  # the scripted provider bills nothing
        "cached": False,
    }
    # The results file carries the same record.
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["cases"][0]["checks"][0]["actual"]["verdict"] == "pass"


def test_a_fail_verdict_fails_with_the_reason(tmp_path: Path) -> None:
    suite = write_suite(tmp_path)
    reply = f"content = {verdict('fail', 'no greeting')}"
    case = run(suite, tmp_path / "out", script_path=script(tmp_path / "s.toml", reply))
    assert case.status == "fail"
    check = judge_check(case)
    assert (check.status, check.message) == ("fail", "no greeting")


def test_the_judge_sees_input_answer_and_rubric_under_a_fixed_schema(tmp_path: Path) -> None:
    from evalctl.providers.scripted import ScriptedProvider, load_script

    suite = write_suite(tmp_path)
    provider = ScriptedProvider(
        load_script(script(tmp_path / "s.toml", f"content = {verdict('pass')}", answer="Hi!"))
    )
    request = RunRequest(paths=[suite], out_dir=tmp_path / "out", show_progress=False)
    execute_run(request, home_settings(), {}, provider_override=provider, retry=NO_SLEEP)
    ask = provider.calls[-1]
    assert ask.tag == "judged/greet#judge"
    assert ask.json_schema == VERDICT_SCHEMA
    prompt = ask.messages[-1].content
    assert "Greet me." in prompt and "Hi!" in prompt and RUBRIC in prompt
    # The case's own system prompt is not part of what is judged.
    assert "Be brief." not in prompt


def run_as_model(
    suite: Path, out: Path, script_path: Path, *, judge_cache: bool = True
) -> CaseResult:
    request = RunRequest(
        provider="scripted",
        script=script_path,
        paths=[suite],
        out_dir=out,
        show_progress=False,
        judge_cache=judge_cache,
    )
    provider = judge_helpers.model_stand_in(script_path)
    outcome = execute_run(request, home_settings(), {}, provider_override=provider, retry=NO_SLEEP)
    [case] = outcome.result.cases
    return case


def test_a_verdict_is_cached_and_no_judge_cache_asks_again(tmp_path: Path) -> None:
    suite = write_suite(tmp_path)
    passing = script(tmp_path / "pass.toml", f"content = {verdict('pass')}")
    failing = script(tmp_path / "fail.toml", f"content = {verdict('fail', 'changed mind')}")

    first = run_as_model(suite, tmp_path / "1", passing)
    assert (first.status, judge_check(first).actual["cached"]) == ("pass", False)
    # Same judge model, rubric, input and answer: the stored verdict, though this judge
    # would now say fail.
    second = run_as_model(suite, tmp_path / "2", failing)
    assert (second.status, judge_check(second).actual["cached"]) == ("pass", True)
    third = run_as_model(suite, tmp_path / "3", failing, judge_cache=False)
    assert (third.status, judge_check(third).actual["cached"]) == ("fail", False)
    # The scripted provider itself is a stand-in: its script may change, so it is always
    # asked (issue 31, defect 1).
    scripted = run(suite, tmp_path / "4", script_path=failing)
    assert (scripted.status, judge_check(scripted).actual["cached"]) == ("fail", False)


def test_a_different_answer_is_not_a_cache_hit(tmp_path: Path) -> None:
    suite = write_suite(tmp_path)
    run(
        suite,
        tmp_path / "1",
        script_path=script(tmp_path / "a.toml", f"content = {verdict('pass')}"),
    )
    other = script(tmp_path / "b.toml", f"content = {verdict('fail')}", answer="Bye.")
    case = run(suite, tmp_path / "2", script_path=other)
    assert (case.status, judge_check(case).actual["cached"]) == ("fail", False)


@pytest.mark.parametrize(
    ("judge_reply", "words"),
    [
        ('error = "permanent"', "the judge failed"),
        ('error = "transient"', "the judge failed"),  # after the retry policy gave up
        ('content = "I think it is fine."', "not a JSON object"),
        ('content = \'{"reason": "ok", "verdict": "maybe"}\'', "'maybe'"),
    ],
)
def test_a_judge_that_cannot_answer_is_an_error_not_a_fail(
    tmp_path: Path, judge_reply: str, words: str
) -> None:
    suite = write_suite(tmp_path)
    case = run(suite, tmp_path / "out", script_path=script(tmp_path / "s.toml", judge_reply))
    assert case.status == "error"
    check = judge_check(case)
    assert check.status == "error" and not check.passed
    assert words in check.message
    assert case.error is not None and "check 'judge'" in case.error
    # Nothing was cached: the next run asks again and gets a verdict.
    good = script(tmp_path / "good.toml", f"content = {verdict('pass')}")
    again = run(suite, tmp_path / "again", script_path=good)
    assert (again.status, judge_check(again).actual["cached"]) == ("pass", False)


def test_cli_no_judge_cache_and_exit_code_for_an_unjudged_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_suite(tmp_path)
    passing = script(tmp_path / "pass.toml", f"content = {verdict('pass')}")
    broken = script(tmp_path / "broken.toml", 'error = "permanent"')
    base = ["run", "--provider", "scripted", "--cases", str(suite), "--no-progress", "--json"]
    assert run_cli(capsys, *base, "--script", str(passing), "--out", str(tmp_path / "1")).code == 0
    # A scripted judge is never served from the cache: the broken script is asked, and fails.
    asked = run_cli(capsys, *base, "--script", str(broken), "--out", str(tmp_path / "2"))
    assert asked.code == 3, asked.err
    unjudged = run_cli(
        capsys, *base, "--script", str(broken), "--no-judge-cache", "--out", str(tmp_path / "3")
    )
    assert unjudged.code == 3  # an unscored case, like any other error


# -- which judge ---------------------------------------------------------------------------


def test_judge_defaults_come_from_evalctl_toml_then_the_run(tmp_path: Path) -> None:
    from evalctl.judge.service import Judge
    from evalctl.providers.scripted import Script, ScriptedProvider
    from evalctl.scoring.judging import JudgeSetup

    run_provider = ScriptedProvider(Script(model="run-model"))
    plain = Judge(JudgeSetup(Settings(), {}, run_provider))
    assert plain.resolve(None, None) == ("scripted", None)
    assert plain.resolve(None, "m2") == ("scripted", "m2")
    assert plain.resolve("openai", None) == ("openai", None)
    configured = Settings(judge=JudgeSettings(provider="anthropic", model="claude-x"))
    judge = Judge(JudgeSetup(configured, {}, run_provider))
    assert judge.resolve(None, None) == ("anthropic", "claude-x")
    assert judge.resolve(None, "claude-y") == ("anthropic", "claude-y")
    assert judge.resolve("gemini", None) == ("gemini", None)


def test_an_unavailable_judge_provider_is_an_error(tmp_path: Path) -> None:
    suite = write_suite(tmp_path, expected=f'{{ rubric = "{RUBRIC}", provider = "anthropic" }}')
    case = run(suite, tmp_path / "out", script_path=script(tmp_path / "s.toml", 'content = "x"'))
    assert case.status == "error"
    assert "ANTHROPIC_API_KEY" in judge_check(case).message


def test_params_are_checked() -> None:
    with pytest.raises(ValidationError, match="unknown provider"):
        JudgeParams.model_validate({"rubric": "r", "provider": "nope"})
    with pytest.raises(ValidationError, match="rubric"):
        JudgeParams.model_validate({"rubric": "  "})
    with pytest.raises(ValidationError, match="Extra inputs"):
        JudgeParams.model_validate({"rubric": "r", "rubrik": "x"})


# -- the pieces ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"reason": "ok", "verdict": "pass"}', ("pass", "ok")),
        ('```json\n{"reason": "no", "verdict": "fail"}\n```', ("fail", "no")),
        ('{"verdict": "pass"}', (None, "the judge gave no reason")),
        ("[]", (None, "the judge's reply is not a JSON object")),
    ],
)
def test_parse_verdict(reply: str, expected: tuple[str | None, str]) -> None:
    assert parse_verdict(reply) == expected


def test_cache_keys_cover_every_field_and_the_store_is_private(tmp_path: Path) -> None:
    fields = ["p", "m", "rubric", "input", "answer"]
    keys = {cache_key(*fields)}
    for i in range(len(fields)):
        changed = list(fields)
        changed[i] += "!"
        keys.add(cache_key(*changed))
    assert len(keys) == len(fields) + 1
    cache = JudgeCache(tmp_path)
    entry = CachedJudgement(
        verdict="pass", reason="r", reply="{}", provider="p", model="m", usage={}
    )
    key = cache_key(*fields)
    cache.put(key, entry)
    assert cache.get(key) == entry
    assert (tmp_path / "judge-cache").stat().st_mode & 0o777 == 0o700
    # A damaged entry is a miss, not a crash.
    next((tmp_path / "judge-cache").rglob("*.json")).write_text("{not json")
    assert cache.get(key) is None
    assert JudgeCache(tmp_path, enabled=False).get(key) is None


# -- judges on the cloud providers, against the fake server --------------------------------


def judge_replies(verdict_word: str) -> Any:
    def responder(req: RecordedRequest) -> Step:
        return Step.reply(f'{{"reason": "checked", "verdict": "{verdict_word}"}}')

    return responder


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(responder=judge_replies("pass")) as srv:
        yield srv


def _fake_env(server: FakeLLMServer) -> dict[str, str]:
    return server.env(anthropic_key=ANTHROPIC_KEY, google_key=GOOGLE_KEY, openai_key=OPENAI_KEY)


@pytest.mark.parametrize(
    ("provider", "model", "schema_at"),
    [
        ("openai", "gpt-4o-mini", ("response_format", "json_schema", "schema")),
        ("anthropic", "claude-sonnet-4-6", ("output_config", "format", "schema")),
        ("gemini", "gemini-2.5-flash", ("generationConfig", "responseJsonSchema")),
    ],
)
def test_cloud_judges_get_the_schema_and_are_priced(
    tmp_path: Path,
    server: FakeLLMServer,
    provider: str,
    model: str,
    schema_at: tuple[str, ...],
    capsys: pytest.CaptureFixture[str],
) -> None:
    suite = write_suite(tmp_path)
    settings = home_settings(judge=JudgeSettings(provider=provider, model=model))
    answer = script(tmp_path / "s.toml", 'content = "unused"')
    case = run(
        suite, tmp_path / "out", script_path=answer, settings=settings, env=_fake_env(server)
    )
    assert case.status == "pass"
    check = judge_check(case)
    assert check.actual["judge"] == f"{provider}/{model}"
    assert check.actual["cost_usd"] is not None and check.actual["cost_usd"] > 0
    [request] = server.requests
    schema: Any = request.body
    for key in schema_at:
        schema = schema[key]
    assert schema["properties"]["verdict"]["enum"] == ["pass", "fail"]
    key = {"openai": OPENAI_KEY, "anthropic": ANTHROPIC_KEY, "gemini": GOOGLE_KEY}[provider]
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert key not in path.read_text(errors="replace")
    assert key not in capsys.readouterr().out


def test_a_fake_server_fault_leaves_the_check_in_error(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    server.enqueue(Step.failing("rate_limit", retry_after=0), Step.failing("auth"))
    suite = write_suite(tmp_path, expected=f'{{ rubric = "{RUBRIC}", provider = "openai" }}')
    settings = home_settings()
    settings.providers.openai_model = "gpt-4o-mini"
    answer = script(tmp_path / "s.toml", 'content = "Hello"')
    case = run(
        suite, tmp_path / "out", script_path=answer, settings=settings, env=_fake_env(server)
    )
    assert case.status == "error"
    check = judge_check(case)
    assert check.status == "error"
    assert "HTTP 401" in check.message and "[REDACTED" in check.message
    assert OPENAI_KEY not in check.message
    assert len(server.requests) == 2  # the 429 was retried, the 401 was not


# -- in an `assert` suite, as users write it -----------------------------------------------

ASSERT_SUITE = """\
[suite]
name = "support"
kind = "assert"
system_prompt = "You answer customer emails."

[[case]]
id = "refund"
input = { prompt = "Can I still return the kettle I bought last week?" }
[[case.assert]]
type = "icontains"
value = "refund"
[[case.assert]]
type = "judge"
rubric = "Says a return is possible and gives the 14-day window."
"""


def assert_script(path: Path, judge_reply: str) -> Path:
    path.write_text(
        '[[cases."support/refund"]]\n'
        'content = "Yes: a full refund within 14 days of purchase."\n\n'
        f'[[cases."support/refund#judge"]]\n{judge_reply}\n'
    )
    return path


@pytest.mark.parametrize(("word", "status", "code"), [("pass", "pass", 0), ("fail", "fail", 0)])
def test_judge_in_an_assert_suite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], word: str, status: str, code: int
) -> None:
    suite = tmp_path / "support.toml"
    suite.write_text(ASSERT_SUITE)
    replies = assert_script(tmp_path / "s.toml", f"content = {verdict(word, 'window given')}")
    out = tmp_path / "out"
    args = ["run", "--provider", "scripted", "--script", str(replies), "--cases", str(suite)]
    result = run_cli(capsys, *args, "--out", str(out), "--no-progress")
    assert result.code == code, result.err
    [case] = json.loads((out / "results.json").read_text())["cases"]
    assert case["status"] == status
    checks = {c["name"]: c for c in case["checks"]}
    assert checks["judge"]["status"] == status
    assert checks["judge"]["message"] == "window given"
    assert checks["judge"]["actual"]["judge"] == "scripted/scripted"
    assert "14-day window" in checks["judge"]["expected"]


def test_a_broken_judge_assertion_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "support.toml"
    suite.write_text(ASSERT_SUITE.replace('type = "judge"', 'type = "judge"\nprovider = "nope"'))
    result = run_cli(capsys, "cases", "validate", str(suite))
    assert result.code == 2
    assert "support.toml" in result.err and "refund" in result.err
    assert "provider" in result.err and "nope" in result.err
