"""The runner end to end on the scripted provider and the test-only echo suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.config import Settings
from evalctl.errors import ExitCode
from evalctl.providers.scripted import ScriptedProvider, load_script
from evalctl.retry import RetryPolicy
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import InterruptedRunError, execute_run
from evalctl.runner.journal import Journal

PERFECT = """
[[cases."echo/hello"]]
content = "hello"

[[cases."echo/shout"]]
tool_calls = [{ name = "upper", arguments = { text = "hi" } }]

[[cases."echo/shout"]]
content = "HI"
"""

NO_SLEEP = RetryPolicy(max_attempts=3, sleep=lambda _s: None)


def _run(
    echo_suite: Path, script: str, tmp_path: Path, **request_args: object
) -> tuple[object, Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    script_path = tmp_path / "script.toml"
    script_path.write_text(script)
    out = tmp_path / "out"
    request = RunRequest(
        provider="scripted",
        script=script_path,
        paths=[echo_suite],
        out_dir=out,
        show_progress=False,
        **request_args,  # type: ignore[arg-type]
    )
    outcome = execute_run(request, Settings(), {}, retry=NO_SLEEP)
    return outcome, out


def test_scripted_run_passes_and_records_tool_calls(echo_suite: Path, tmp_path: Path) -> None:
    outcome, out = _run(echo_suite, PERFECT, tmp_path)
    result = outcome.result  # type: ignore[attr-defined]
    assert [c.status for c in result.cases] == ["pass", "pass"]
    shout = result.cases[1]
    assert shout.turns == 2
    assert [(t.name, t.arguments, t.result, t.turn) for t in shout.tool_calls] == [
        ("upper", {"text": "hi"}, "HI", 1)
    ]
    assert shout.first_try
    assert result.summary.passed == 2
    on_disk = json.loads((out / "results.json").read_text())
    assert on_disk["schema_version"] == 3
    assert on_disk["cases"][1]["tool_calls"][0]["data"] == {"length": 2}
    assert (out / "results.toml").is_file()
    assert len(Journal(out / "journal.jsonl").read()) == 2


def test_wrong_answer_fails_with_expected_and_actual(echo_suite: Path, tmp_path: Path) -> None:
    outcome, _ = _run(echo_suite, PERFECT.replace('content = "hello"', 'content = "bye"'), tmp_path)
    hello = outcome.result.cases[0]  # type: ignore[attr-defined]
    assert hello.status == "fail"
    check = hello.checks[0]
    assert (check.name, check.passed, check.expected, check.actual) == (
        "answer",
        False,
        "hello",
        "bye",
    )


def test_tool_error_is_sent_back_and_spoils_first_try(echo_suite: Path, tmp_path: Path) -> None:
    script = PERFECT.replace(
        '[[cases."echo/shout"]]\ntool_calls',
        '[[cases."echo/shout"]]\ntool_calls = [{ name = "upper", arguments = { text = 1 } }]\n\n'
        '[[cases."echo/shout"]]\ntool_calls',
    )
    outcome, _ = _run(echo_suite, script, tmp_path)
    shout = outcome.result.cases[1]  # type: ignore[attr-defined]
    assert shout.status == "pass"
    assert [t.is_error for t in shout.tool_calls] == [True, False]
    # The spy refuses it against the tool's parameters before the tool runs.
    assert "text: 1 is not of type 'string'" in shout.tool_calls[0].result
    assert shout.tool_calls[0].invalid_arguments
    assert not shout.first_try


def test_exhausted_retries_end_as_error(echo_suite: Path, tmp_path: Path) -> None:
    script = PERFECT.replace('content = "hello"', 'error = "transient"')
    outcome, _ = _run(echo_suite, script, tmp_path)
    hello = outcome.result.cases[0]  # type: ignore[attr-defined]
    assert hello.status == "error"
    assert "transient" in (hello.error or "")
    assert outcome.result.summary.errors == 1  # type: ignore[attr-defined]


def test_server_crash_is_retried_then_saved_as_repro(echo_suite: Path, tmp_path: Path) -> None:
    script = PERFECT.replace('content = "hello"', 'error = "crash"')
    outcome, out = _run(echo_suite, script, tmp_path, crash_retries=1)
    hello = outcome.result.cases[0]  # type: ignore[attr-defined]
    assert hello.status == "error"
    assert hello.server_crashed
    assert len(hello.attempts) == 2
    assert all(a.server_crashed for a in hello.attempts)
    repro = out / "repros" / "echo__hello.json"
    assert repro.is_file()
    assert json.loads(repro.read_text())["tag"] == "echo/hello"
    # The other case is intact.
    assert outcome.result.cases[1].status == "pass"  # type: ignore[attr-defined]


def test_case_timeout_is_an_error(echo_suite: Path, tmp_path: Path) -> None:
    script = PERFECT.replace('content = "hello"', 'content = "hello"\ndelay_s = 2.0')
    outcome, _ = _run(echo_suite, script, tmp_path, timeout_s=0.2)
    hello = outcome.result.cases[0]  # type: ignore[attr-defined]
    assert hello.status == "error"
    assert "timed out" in (hello.error or "")


class _NoToolsProvider(ScriptedProvider):
    @property
    def capabilities(self) -> frozenset[str]:
        return frozenset()


def test_unmet_requirement_skips_with_reason(echo_suite: Path, tmp_path: Path) -> None:
    echo_suite.write_text(
        echo_suite.read_text().replace("max_turns = 3", 'max_turns = 3\nrequires = ["tools"]')
    )
    script = tmp_path / "s.toml"
    script.write_text(PERFECT)
    request = RunRequest(paths=[echo_suite], out_dir=tmp_path / "o", show_progress=False)
    outcome = execute_run(
        request, Settings(), {}, provider_override=_NoToolsProvider(load_script(script))
    )
    statuses = {c.status for c in outcome.result.cases}
    assert statuses == {"skipped"}
    assert "tools" in (outcome.result.cases[0].skip_reason or "")
    assert outcome.result.summary.skipped == 2


class _InterruptingProvider(ScriptedProvider):
    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        if request.tag == "echo/shout":
            raise KeyboardInterrupt
        return super().complete(request, timeout=timeout)


def test_interrupted_run_keeps_finished_cases(echo_suite: Path, tmp_path: Path) -> None:
    script = tmp_path / "s.toml"
    script.write_text(PERFECT)
    out = tmp_path / "o"
    request = RunRequest(paths=[echo_suite], out_dir=out, show_progress=False)
    with pytest.raises(InterruptedRunError) as info:
        execute_run(
            request, Settings(), {}, provider_override=_InterruptingProvider(load_script(script))
        )
    assert info.value.code is ExitCode.INTERRUPTED
    saved = json.loads((out / "results.json").read_text())
    assert saved["interrupted"] is True
    assert [c["key"] for c in saved["cases"]] == ["echo/hello"]


def test_concurrent_run_equals_serial_run(echo_suite: Path, tmp_path: Path) -> None:
    serial, _ = _run(echo_suite, PERFECT, tmp_path / "a")
    parallel, _ = _run(echo_suite, PERFECT, tmp_path / "b", concurrency=4)

    def essence(outcome: object) -> list[tuple[str, str, list[str]]]:
        return [
            (c.key, c.status, [t.result for t in c.tool_calls])
            for c in outcome.result.cases  # type: ignore[attr-defined]
        ]

    assert essence(serial) == essence(parallel)


BUDGET_ENDS_ON_A_TOOL_CALL = """
[[cases."echo/hello"]]
content = "hello"

[[cases."echo/shout"]]
tool_calls = [{ name = "upper", arguments = { text = "h" } }]

[[cases."echo/shout"]]
tool_calls = [{ name = "upper", arguments = { text = "hi" } }]

[[cases."echo/shout"]]
tool_calls = [{ name = "upper", arguments = { text = "hi" } }]

[[cases."echo/shout"]]
content = "HI"
"""


def test_budget_ending_on_a_tool_call_gets_a_last_answer_turn_without_tools(
    echo_suite: Path, tmp_path: Path
) -> None:
    from evalctl.runner.attempt import FINAL_ANSWER_PROMPT

    outcome, _out = _run(echo_suite, BUDGET_ENDS_ON_A_TOOL_CALL, tmp_path)
    shout = outcome.result.cases[1]  # type: ignore[attr-defined]
    # max_turns is 3 and all three were tool calls: without the extra turn the answer would
    # be empty and the answer check would fail whatever the model knew.
    assert shout.status == "pass"
    assert shout.turns == 4 and len(shout.transcript) == 4
    last = shout.transcript[-1]
    assert last.final_answer_turn and not last.tools_offered and last.tool_choice == "none"
    assert [m.content for m in last.sent][-1] == FINAL_ANSWER_PROMPT
    assert last.reply is not None and last.reply.content == "HI"
    assert not any(t.final_answer_turn for t in shout.transcript[:-1])


def test_each_case_keeps_its_input_and_every_turn_as_sent(echo_suite: Path, tmp_path: Path) -> None:
    _outcome, out = _run(echo_suite, PERFECT, tmp_path)
    data = json.loads((out / "results.json").read_text())
    hello, shout = data["cases"]
    assert hello["input"] == {"prompt": "say hello"}
    # The system prompt is stored once and referred to, not repeated per turn.
    assert data["system_prompts"] == {hello["system_prompt"]: "Answer exactly."}
    assert [m["role"] for m in hello["transcript"][0]["sent"]] == ["user"]
    assert hello["transcript"][0]["sent"][0]["content"] == "say hello"
    first, second = shout["transcript"]
    assert first["reply"]["tool_calls"][0]["name"] == "upper"
    # Turn 2 sent the tool's result, as the model saw it.
    assert [(m["role"], m["content"]) for m in second["sent"]] == [("tool", "HI")]
    assert second["reply"]["content"] == "HI" and not second["final_answer_turn"]


def test_a_version_1_results_file_reads_with_check_statuses(
    echo_suite: Path, tmp_path: Path
) -> None:
    from evalctl.results.io import read_run

    _outcome, out = _run(echo_suite, '[[cases."echo/shout"]]\ncontent = "HI"\n' + PERFECT, tmp_path)
    data = json.loads((out / "results.json").read_text())
    data["schema_version"] = 1
    del data["system_prompts"]
    for case in data["cases"]:
        for key in ("input", "system_prompt", "transcript"):
            case.pop(key, None)
        for check in case["checks"]:
            del check["status"]
    (out / "old.json").write_text(json.dumps(data))
    run = read_run(out / "old.json")
    statuses = [[(c.name, c.status) for c in case.checks] for case in run.cases]
    assert statuses == [[("answer", "pass")], [("answer", "pass"), ("tool", "fail")]]
    assert run.cases[1].checks[1].passed is False


REPEATS_A_FAILED_CALL = """
[[cases."echo/hello"]]
content = "hello"

[[cases."echo/shout"]]
tool_calls = [{ name = "upper", arguments = { text = 1 } }]

[[cases."echo/shout"]]
tool_calls = [{ name = "upper", arguments = { text = 1 } }]

[[cases."echo/shout"]]
content = "HI"
"""


def test_a_failed_call_sent_again_unchanged_ends_the_tool_turns(
    echo_suite: Path, tmp_path: Path
) -> None:
    outcome, _out = _run(echo_suite, REPEATS_A_FAILED_CALL, tmp_path)
    shout = outcome.result.cases[1]  # type: ignore[attr-defined]
    # Turn 2 repeated turn 1's failed call argument for argument and it failed again: no
    # third tool turn; the answer is asked for with tools disabled.
    assert [r.is_error for r in shout.tool_calls] == [True, True]
    assert [t.repeated_failed_calls for t in shout.transcript] == [False, True, False]
    last = shout.transcript[-1]
    assert last.final_answer_turn and last.tool_choice == "none"
    assert last.reply is not None and last.reply.content == "HI"


def test_a_failed_call_sent_again_with_other_arguments_goes_on(
    echo_suite: Path, tmp_path: Path
) -> None:
    changed = REPEATS_A_FAILED_CALL.replace(
        'text = 1 } }]\n\n[[cases."echo/shout"]]\ncontent',
        'text = 2 } }]\n\n[[cases."echo/shout"]]\ncontent',
    )
    assert changed != REPEATS_A_FAILED_CALL
    outcome, _out = _run(echo_suite, changed, tmp_path)
    shout = outcome.result.cases[1]  # type: ignore[attr-defined]
    assert not any(t.repeated_failed_calls for t in shout.transcript)
    # The model changed its call, so it gets its third turn, where it answers.
    assert len(shout.transcript) == 3 and not shout.transcript[-1].final_answer_turn
    assert shout.status == "pass"
