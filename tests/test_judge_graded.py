"""The `judge` assertion's graded mode: `threshold` asks the judge for a score from 0 to 1,
and the check passes when the score reaches it."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalctl.judge.cache import cache_key
from evalctl.judge.prompt import GRADED_SCHEMA, VERDICT_SCHEMA, Reading, read_reply
from evalctl.providers.scripted import ScriptedProvider, load_script
from evalctl.results.models import CaseResult, CheckResult
from tests.cli_helpers import run_cli
from tests.judge_helpers import (
    assert_suite,
    graded,
    model_stand_in,
    reply_script,
    run_case,
    verdict,
)

RUBRIC = "Says a return is possible and gives the 14-day window."
PASS_FAIL_JUDGE = f'type = "judge"\nrubric = "{RUBRIC}"'


def graded_judge(threshold: str = "0.7") -> str:
    return f"{PASS_FAIL_JUDGE}\nthreshold = {threshold}"


def judge_check(case: CaseResult) -> CheckResult:
    [check] = [c for c in case.checks if c.name == "judge"]
    return check


def judged(
    tmp_path: Path,
    judge_reply: str,
    *,
    judge: str | None = None,
    out: str = "out",
    judge_cache: bool = True,
    as_model: bool = False,
) -> CaseResult:
    """The one case of a suite whose one assertion is `judge` (graded at 0.7 by default), its
    judge answering `judge_reply`; `as_model`: by a script the judge cache takes for a model."""
    suite = assert_suite(tmp_path, judge or graded_judge())
    script = reply_script(tmp_path / f"{out}.toml", {"support/refund#judge": judge_reply})
    provider = model_stand_in(script) if as_model else None
    return run_case(suite, tmp_path / out, script, judge_cache=judge_cache, provider=provider)


# -- the score decides -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("score", "status", "word"), [(0.8, "pass", ">="), (0.7, "pass", ">="), (0.55, "fail", "<")]
)
def test_the_score_against_the_threshold_decides(
    tmp_path: Path, score: float, status: str, word: str
) -> None:
    # The judge's own verdict says pass every time: in graded mode only the score counts.
    case = judged(tmp_path, f"content = {graded(score, 'pass', 'window given')}")
    assert case.status == status
    check = judge_check(case)
    assert check.status == status
    assert check.expected == ">= 0.7"
    assert check.actual["score"] == score
    assert check.actual["verdict"] == "pass"
    assert check.message == f"score {score:g} {word} 0.7: window given"


def test_a_graded_fail_is_a_failed_case_not_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = assert_suite(tmp_path, graded_judge("0.9"))
    script = reply_script(tmp_path / "s.toml", {"support/refund#judge": f"content = {graded(0.6)}"})
    args = ["run", "--provider", "scripted", "--script", str(script), "--cases", str(suite)]
    result = run_cli(capsys, *args, "--out", str(tmp_path / "out"), "--no-progress", "--json")
    assert result.code == 0, result.err  # a failed case without a baseline is not a gate
    assert '"status": "fail"' in result.out


# -- a reply that is no graded judgement ----------------------------------------------------


@pytest.mark.parametrize(
    ("judge_reply", "words"),
    [
        (f"content = {verdict('pass', 'fine')}", "no score"),
        (f"content = {graded(1.5)}", "outside 0 to 1"),
        (f"content = {graded(-0.1)}", "outside 0 to 1"),
        (f"content = {graded('high')}", "not a number"),
        (f"content = {graded(True)}", "not a number"),
    ],
)
def test_a_graded_reply_without_a_usable_score_is_an_error(
    tmp_path: Path, judge_reply: str, words: str
) -> None:
    case = judged(tmp_path, judge_reply)
    assert case.status == "error"
    check = judge_check(case)
    assert check.status == "error" and not check.passed
    assert words in check.message
    assert check.expected == ">= 0.7"
    # Nothing was cached: the next run asks again and gets a score.
    again = judged(tmp_path, f"content = {graded(0.9)}", out="again")
    assert (again.status, judge_check(again).actual["cached"]) == ("pass", False)


# -- what the judge is asked ------------------------------------------------------------------


def test_a_graded_judge_is_asked_for_a_score_under_a_schema_requiring_one(
    tmp_path: Path,
) -> None:
    suite = assert_suite(
        tmp_path, graded_judge(), PASS_FAIL_JUDGE.replace("type", 'name = "pf"\ntype')
    )
    script = reply_script(
        tmp_path / "s.toml",
        {
            "support/refund#judge:judge": f"content = {graded(0.9)}",
            "support/refund#judge:pf": f"content = {verdict('pass')}",
        },
    )
    provider = ScriptedProvider(load_script(script))
    case = run_case(suite, tmp_path / "out", script, provider=provider)
    assert case.status == "pass", case.checks
    asks = {call.tag: call for call in provider.calls if "#judge" in call.tag}
    graded_ask, plain_ask = asks["support/refund#judge:judge"], asks["support/refund#judge:pf"]
    assert graded_ask.json_schema == GRADED_SCHEMA
    assert "score" in GRADED_SCHEMA["required"]
    assert "score" in graded_ask.messages[0].content
    # The threshold is not shown to the judge: a stored score serves any threshold.
    assert "0.7" not in graded_ask.messages[-1].content
    # Pass/fail is asked as before, under the schema whose score is optional.
    assert plain_ask.json_schema == VERDICT_SCHEMA
    assert VERDICT_SCHEMA["required"] == ["reason", "verdict"]
    assert VERDICT_SCHEMA["properties"]["score"] == {"type": "number", "minimum": 0, "maximum": 1}
    assert "score" not in plain_ask.messages[0].content


def test_read_reply_in_both_modes() -> None:
    reply = '{"reason": "ok", "score": 0.25, "verdict": "fail"}'
    assert read_reply(reply, graded=True) == Reading("fail", "ok", 0.25)
    assert read_reply(reply) == Reading("fail", "ok")
    assert read_reply('{"reason": "ok", "score": 1, "verdict": "pass"}', graded=True) == Reading(
        "pass", "ok", 1.0
    )


# -- the cache ---------------------------------------------------------------------------------


def test_the_cache_keys_on_the_mode_and_keeps_the_score_for_any_threshold(
    tmp_path: Path,
) -> None:
    fields = ("p", "m", "rubric", "input", "answer")
    assert cache_key(*fields) != cache_key(*fields, graded=True)
    # A pass/fail verdict on the same question does not answer a graded judge.
    first = judged(
        tmp_path, f"content = {verdict('pass')}", judge=PASS_FAIL_JUDGE, out="1", as_model=True
    )
    assert (first.status, judge_check(first).actual["cached"]) == ("pass", False)
    second = judged(tmp_path, f"content = {graded(0.8)}", out="2", as_model=True)
    assert (second.status, judge_check(second).actual["cached"]) == ("pass", False)
    # The stored score, under a stricter threshold (this script's judge would now say 0.1).
    third = judged(
        tmp_path, f"content = {graded(0.1)}", judge=graded_judge("0.9"), out="3", as_model=True
    )
    check = judge_check(third)
    assert (third.status, check.actual["cached"], check.actual["score"]) == ("fail", True, 0.8)
    assert check.expected == ">= 0.9"
    # And no cache: asked again.
    fourth = judged(tmp_path, f"content = {graded(0.1)}", out="4", judge_cache=False, as_model=True)
    assert (judge_check(fourth).actual["score"], judge_check(fourth).actual["cached"]) == (
        0.1,
        False,
    )


# -- the threshold in a suite file ---------------------------------------------------------------


def test_a_threshold_is_a_known_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = assert_suite(tmp_path, graded_judge())
    result = run_cli(capsys, "cases", "validate", str(suite))
    assert result.code == 0, result.err


@pytest.mark.parametrize("threshold", ["1.5", "-0.1", "true", '"0.7"', "nan"])
def test_a_threshold_outside_0_to_1_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], threshold: str
) -> None:
    suite = assert_suite(tmp_path, graded_judge(threshold))
    result = run_cli(capsys, "cases", "validate", str(suite))
    assert result.code == 2
    assert "support.toml" in result.err and "refund" in result.err
    assert "threshold" in result.err and "unknown key" not in result.err
    assert "Traceback" not in result.err


def test_a_graded_judge_from_the_suite_defaults(tmp_path: Path) -> None:
    defaults = f"[[suite.defaults.assert]]\n{graded_judge('0.6')}"
    suite = assert_suite(tmp_path, 'type = "icontains"\nvalue = "refund"', defaults=defaults)
    script = reply_script(tmp_path / "s.toml", {"support/refund#judge": f"content = {graded(0.5)}"})
    case = run_case(suite, tmp_path / "out", script)
    check = judge_check(case)
    assert (check.status, check.expected, check.actual["score"]) == ("fail", ">= 0.6", 0.5)
    assert case.status == "fail"
