"""The defects found porting promptfoo and Inspect suites (issue 31), each pinned: a
scripted judge served from the cache, the prompt missing from turn 1's transcript, Rich
markup eating `[matrix]` and `[judge]`, the baseline's lock file left behind, a spurious
"needs at least one [[case]]", and judges no reply script can answer beside a target.
(`id_template` with `vars[...]`: tests/test_row_ids_and_limit.py.)"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from evalctl.cases.loader import load_suite
from evalctl.cli.run import CaseLine, RunOutput, render
from evalctl.errors import BadInputError
from evalctl.results.models import Summary
from tests.cli_helpers import run_cli

JUDGED = """\
[suite]
name = "support"
kind = "assert"
system_prompt = "Be kind."

[[case]]
id = "refund"
input = { prompt = "Can I get a refund?" }
[[case.assert]]
type = "judge"
name = "tone"
rubric = "Polite."
"""


def _verdict_script(path: Path, verdict: str) -> Path:
    reply = json.dumps({"reason": f"said {verdict}", "verdict": verdict})
    path.write_text(
        '[[cases."support/refund"]]\ncontent = "Of course."\n'
        f'[[cases."support/refund#judge"]]\ncontent = {json.dumps(reply)}\n'
    )
    return path


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    out = Path(args[args.index("--out") + 1])
    ran = run_cli(capsys, "run", *args, "--no-progress")
    assert ran.code == 0, ran.out + ran.err
    data: dict[str, Any] = json.loads((out / "results.json").read_text())
    return data


def test_a_scripted_judge_is_asked_again_when_its_script_changes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "support.toml"
    suite.write_text(JUDGED)
    script = tmp_path / "script.toml"
    common = ("--provider", "scripted", "--script", str(script), "--cases", str(suite))
    _verdict_script(script, "pass")
    first = _run(capsys, *common, "--out", str(tmp_path / "one"))
    assert first["cases"][0]["status"] == "pass"
    # A planted judge regression: the same question, another scripted verdict.
    _verdict_script(script, "fail")
    second = _run(capsys, *common, "--out", str(tmp_path / "two"))
    (check,) = second["cases"][0]["checks"]
    assert (check["status"], check["message"]) == ("fail", "said fail")
    assert second["cases"][0]["status"] == "fail"


def test_turn_one_of_the_transcript_holds_the_prompt_as_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "support.toml"
    suite.write_text(JUDGED)
    script = _verdict_script(tmp_path / "script.toml", "pass")
    results = _run(
        capsys,
        *("--provider", "scripted", "--script", str(script), "--cases", str(suite)),
        *("--out", str(tmp_path / "out")),
    )
    sent = results["cases"][0]["transcript"][0]["sent"]
    # The user prompt; the system prompt is stored once for the run, not per turn.
    assert [(m["role"], m["content"]) for m in sent] == [("user", "Can I get a refund?")]


def test_run_help_keeps_its_bracketed_words(capsys: pytest.CaptureFixture[str]) -> None:
    shown = run_cli(capsys, "run", "--help")
    assert shown.code == 0
    assert "a [matrix] in evalctl.toml" in " ".join(shown.out.split())


def test_the_run_table_shows_an_error_s_bracketed_words(
    capsys: pytest.CaptureFixture[str],
) -> None:
    error = "no judge: name the judge's provider ([judge] provider in evalctl.toml)"
    render(
        RunOutput(
            run_id="r",
            provider="command",
            model="app",
            results_path="results.json",
            interrupted=False,
            summary=Summary(),
            cases=[
                CaseLine(key="s/[x]", status="error", failed_checks=[], latency_ms=1.0, error=error)
            ],
        )
    )
    shown = " ".join(capsys.readouterr().out.split())
    # The table folds long text, so the words are looked for one by one.
    assert "([judge]" in shown
    assert "s/[x]" in shown


def test_baseline_leaves_no_lock_file_beside_the_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "support.toml"
    suite.write_text(JUDGED)
    script = _verdict_script(tmp_path / "script.toml", "pass")
    baselines = tmp_path / "baselines"
    made = run_cli(
        capsys,
        *("baseline", "--provider", "scripted", "--script", str(script)),
        *("--cases", str(suite), "--out", str(baselines / "scripted.json")),
    )
    assert made.code == 0, made.out + made.err
    assert sorted(p.name for p in baselines.iterdir()) == ["scripted.json"]


def test_a_bad_case_template_key_is_the_only_error(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text("id,q\na,x\n")
    path = tmp_path / "s.toml"
    path.write_text(
        '[suite]\nname = "s"\nkind = "assert"\ncases_from = "rows.csv"\n'
        '[suite.case_template]\ninput = { prompt = "{{ q }}" }\nprompt_text = "typo"\n'
    )
    with pytest.raises(BadInputError) as info:
        load_suite(path)
    text = str(info.value)
    assert "suite.case_template.prompt_text" in text
    assert "at least one [[case]]" not in text


TARGETED = f"""\
[suite]
name = "app"
kind = "assert"
target = {{ type = "command", argv = ["{sys.executable}", "app.py"] }}

[[case]]
id = "hello"
input = {{ prompt = "Say hello." }}
[[case.assert]]
type = "judge"
rubric = "Friendly."
"""

APP = "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'output': 'hello'}))\n"


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_judge_that_would_ask_the_application_is_refused_with_a_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    (tmp_path / "app.py").write_text(APP)
    suite = tmp_path / "app.toml"
    suite.write_text(TARGETED)
    script = tmp_path / "script.toml"
    script.write_text(
        '[[cases."app/hello#judge"]]\ncontent = \'{"reason": "ok", "verdict": "pass"}\'\n'
    )
    args = (
        ("cases", "validate", str(suite), "--script", str(script))
        if command == "validate"
        else ("run", "--provider", "command", "--script", str(script), "--cases", str(suite))
    )
    ran = run_cli(capsys, *args, "--out", str(tmp_path / "out")) if command == "run" else None
    ran = ran or run_cli(capsys, *args)
    assert ran.code == 2, ran.out + ran.err
    assert "has no judge" in ran.err and "command target" in ran.err
    assert "[judge] provider" in ran.err
    assert not (tmp_path / "out" / "results.json").exists()


def test_a_judge_reply_runs_to_its_schema_s_end() -> None:
    """The local engine's loop guard stops a reply that repeats itself; inside a judge's
    verdict that left a cut-off JSON (a malformed verdict, the case in error). Under the
    verdict's grammar every part is bounded, so the judge's request lets it run on."""
    from evalctl.judge.prompt import MAX_TOKENS, REASON_MAX_CHARS, judge_request

    for graded in (False, True):
        request = judge_request("Polite.", "q", "a", tag="s/c#judge", graded=graded)
        assert request.allow_repetition
        assert request.json_schema is not None
        assert request.json_schema["properties"]["reason"]["maxLength"] == REASON_MAX_CHARS
    # The longest reason, a score's 16 digits and the JSON around them fit the budget.
    assert REASON_MAX_CHARS + 60 <= MAX_TOKENS


@pytest.mark.model
def test_the_embedded_model_judges_with_well_formed_verdicts() -> None:
    from evalctl.judge.prompt import judge_request, read_reply
    from tests.local_helpers import make_provider

    asked = [
        ("Can I get a refund?", "Of course, within 14 days.", "Polite."),
        ("Say hello", "hello", "Says hello."),
        ("What is 2+2?", "5", "The answer is correct."),
        ("Classify: the app crashes on start", "bug bug bug bug bug bug", "One word."),
    ]
    provider = make_provider()
    try:
        for graded in (False, True):
            for case_input, answer, rubric in asked:
                request = judge_request(rubric, case_input, answer, tag="j#judge", graded=graded)
                reply = provider.complete(request, timeout=120)
                reading = read_reply(reply.content, graded=graded)
                assert not isinstance(reading, str), (reading, reply.content)
    finally:
        provider.stop_daemon(grace_s=2)
        provider.close()
