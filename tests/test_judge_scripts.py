"""Reply scripts and the judge: replies addressed to one judge assertion
(`suite/id#judge:<check name>`), the plain `#judge` fallback, and `cases validate --script`
reporting judges a script leaves unanswered."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalctl.providers.scripted import ScriptedProvider, load_script, reply_keys
from tests.cli_helpers import run_cli
from tests.judge_helpers import assert_suite, graded, reply_script, run_case, verdict

TONE = 'type = "judge"\nname = "tone"\nrubric = "Polite."'
FACTS = 'type = "judge"\nname = "facts"\nrubric = "Gives the 14-day window."'
UNNAMED = 'type = "judge"\nrubric = "Mentions the kettle."'


# -- addressed replies in a run ---------------------------------------------------------------


def test_one_case_can_have_a_passing_and_a_failing_judge(tmp_path: Path) -> None:
    suite = assert_suite(tmp_path, TONE, FACTS, UNNAMED)
    script = reply_script(
        tmp_path / "s.toml",
        {
            "support/refund#judge:tone": f"content = {verdict('pass', 'polite')}",
            "refund#judge:facts": f"content = {verdict('fail', 'no window')}",  # a bare id
            "support/refund#judge": f"content = {verdict('pass', 'the fallback')}",
        },
    )
    provider = ScriptedProvider(load_script(script))
    case = run_case(suite, tmp_path / "out", script, provider=provider)
    checks = {c.name: (c.status, c.message) for c in case.checks}
    assert checks == {
        "tone": ("pass", "polite"),
        "facts": ("fail", "no window"),
        "judge": ("pass", "the fallback"),  # no addressed reply: the plain `#judge` one
    }
    assert case.status == "fail"
    tags = sorted(call.tag for call in provider.calls if "#" in call.tag)
    assert tags == [
        "support/refund#judge:facts",
        "support/refund#judge:judge",
        "support/refund#judge:tone",
    ]


def test_two_unnamed_judges_are_addressed_by_their_result_names(tmp_path: Path) -> None:
    second = 'type = "judge"\nrubric = "Names the product."'
    suite = assert_suite(tmp_path, UNNAMED, second)
    script = reply_script(
        tmp_path / "s.toml",
        {
            "support/refund#judge:judge": f"content = {verdict('fail', 'first')}",
            "support/refund#judge:judge #2": f"content = {verdict('pass', 'second')}",
        },
    )
    case = run_case(suite, tmp_path / "out", script)
    assert {c.name: (c.status, c.message) for c in case.checks} == {
        "judge": ("fail", "first"),
        "judge #2": ("pass", "second"),
    }


def test_addressed_graded_and_pass_fail_judges_side_by_side(tmp_path: Path) -> None:
    suite = assert_suite(tmp_path, TONE + "\nthreshold = 0.5", FACTS)
    script = reply_script(
        tmp_path / "s.toml",
        {
            "support/refund#judge:tone": f"content = {graded(0.4, 'pass', 'curt')}",
            # A pass/fail judge reads the verdict alone, whatever score comes with it.
            "support/refund#judge:facts": f"content = {graded(5, 'pass', 'window given')}",
        },
    )
    case = run_case(suite, tmp_path / "out", script)
    checks = {c.name: c for c in case.checks}
    assert (checks["tone"].status, checks["tone"].expected) == ("fail", ">= 0.5")
    assert checks["tone"].actual["score"] == 0.4
    assert (checks["facts"].status, checks["facts"].message) == ("pass", "window given")
    assert "score" not in checks["facts"].actual


def test_reply_keys_put_the_addressed_reply_before_the_plain_one() -> None:
    assert reply_keys("support/refund#judge:tone") == [
        "support/refund#judge:tone",
        "refund#judge:tone",
        "support/refund#judge",
        "refund#judge",
    ]
    assert reply_keys("support/refund#judge") == ["support/refund#judge", "refund#judge"]
    assert reply_keys("support/refund") == ["support/refund", "refund"]


# -- cases validate --script ------------------------------------------------------------------


def validate(capsys: pytest.CaptureFixture[str], suite: Path, script: Path) -> tuple[int, str]:
    result = run_cli(capsys, "cases", "validate", str(suite), "--script", str(script))
    assert "Traceback" not in result.err
    return result.code, result.err


def test_validate_reports_judges_the_script_does_not_answer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = assert_suite(tmp_path, TONE, FACTS)
    # Only `tone` is answered, and the default is the case's answer, no verdict.
    tone_only = {"support/refund#judge:tone": f"content = {verdict('pass')}"}
    script = reply_script(tmp_path / "replies.toml", tone_only)
    script.write_text(script.read_text() + '\n[[default]]\ncontent = "{}"\n')
    code, err = validate(capsys, suite, script)
    assert code == 2
    assert "replies.toml" in err and "support/refund" in err
    assert "'facts'" in err and "'tone'" not in err
    assert "support/refund#judge:facts" in err  # the key that would answer it
    # Each way of answering it is accepted: addressed, plain (by key or bare id), or a fault
    # injected on purpose.
    for fix in (
        {"support/refund#judge:facts": 'error = "permanent"'},
        {"support/refund#judge": f"content = {verdict('pass')}"},
        {"refund#judge": f"content = {verdict('pass')}"},
    ):
        fixed = reply_script(tmp_path / "fixed.toml", tone_only | fix)
        assert validate(capsys, suite, fixed) == (0, "")


def test_validate_names_every_unanswered_judge_of_a_script_with_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `tone` is graded by another provider: the script is never asked about it.
    suite = assert_suite(tmp_path, TONE + '\nprovider = "openai"', FACTS, UNNAMED)
    script = reply_script(tmp_path / "replies.toml", {})
    code, err = validate(capsys, suite, script)
    assert code == 2
    assert "'facts'" in err and "'judge'" in err and "'tone'" not in err
    # `run` refuses the same script before its first case, as validate does (it once ran
    # every case and ended each judged one in error, exit 3).
    out = tmp_path / "out"
    run = run_cli(
        capsys, "run", "--provider", "scripted", "--script", str(script), "--cases", str(suite),
        "--out", str(out), "--no-progress",
    )  # fmt: skip
    assert run.code == 2 and "Traceback" not in run.err
    assert "replies.toml" in run.err and "support/refund" in run.err
    assert "1 more judge check(s) lack replies" in run.err
    assert not (out / "results.json").exists()
    # With the script's judge replies, the same run goes ahead.
    answered = reply_script(
        tmp_path / "answered.toml", {"support/refund#judge": f"content = {verdict('pass')}"}
    )
    went_ahead = run_cli(
        capsys, "run", "--provider", "scripted", "--script", str(answered), "--cases", str(suite),
        "--out", str(tmp_path / "ok"), "--no-progress",
    )  # fmt: skip
    # It ran its case (which errs only on `tone`, graded by an openai judge with no key here).
    assert went_ahead.code == 3 and (tmp_path / "ok" / "results.json").exists()


def test_a_default_reply_answers_a_judge_only_as_a_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "s.toml"
    for default, threshold, code in [
        ("'{}'", "", 2),
        (verdict("pass"), "", 0),  # a default that is a verdict answers the judge
        (verdict("pass"), "\nthreshold = 0.5", 2),  # ... but not a graded one: no score
        (graded(0.9), "\nthreshold = 0.5", 0),
    ]:
        suite = assert_suite(tmp_path, TONE + threshold)
        script.write_text(f"[[default]]\ncontent = {default}\n")
        found, err = validate(capsys, suite, script)
        assert found == code, (default, threshold, err)
        if code:
            assert "'tone'" in err and "default reply" in err


def test_validate_reports_a_reply_addressed_to_no_judge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = assert_suite(tmp_path, TONE)
    script = reply_script(
        tmp_path / "s.toml",
        {
            "support/refund#judge:tone": f"content = {verdict('pass')}",
            "support/refund#judge:tonne": f"content = {verdict('fail')}",
        },
    )
    code, err = validate(capsys, suite, script)
    assert code == 2
    assert "support/refund#judge:tonne" in err and "'tone'" in err
