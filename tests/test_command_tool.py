"""The `command` backend run directly: nothing a call starts outlives it (`nohup`, `setsid`),
a tool sees only the allowlisted environment and what it declares, output past the cap is a
tool error read no further, and whatever bytes a command prints end as a tool result."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from evalctl.cases.schema import Case
from evalctl.cases.tooldecl import ToolDecl
from evalctl.config import Settings
from evalctl.tools.base import ToolContext, ToolFailedError, ToolOutput
from evalctl.tools.command import CommandTool


def _context(tmp_path: Path, **config: Any) -> ToolContext:
    return ToolContext(
        case=Case.model_construct(), fixtures_dir=tmp_path, settings=Settings(**config)
    )


def _tool(tmp_path: Path, command: list[str], **fields: Any) -> CommandTool:
    decl = ToolDecl(name="t", description="a test tool", command=command, timeout_s=120, **fields)
    return CommandTool(decl, tmp_path)


def _sh(tmp_path: Path, script: str, **fields: Any) -> CommandTool:
    return _tool(tmp_path, ["sh", "-c", script], **fields)


def _processes_with(token: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["status"] != psutil.STATUS_ZOMBIE and token in " ".join(cmdline):
            found.append(proc)
    return found


@pytest.mark.parametrize(
    "detach",
    [
        "nohup sleep {t} >/dev/null 2>&1 &",
        "sleep {t} &",  # holds stdout open: the call must not wait on it
        "setsid sleep {t} >/dev/null 2>&1 &",
        "setsid sh -c 'sleep {t} & exit 0' >/dev/null 2>&1;",  # re-parented mid-call
    ],
)
def test_nothing_a_call_starts_outlives_it(tmp_path: Path, detach: str) -> None:
    token = f"{4000 + os.getpid() % 1000}.{len(detach)}7"
    tool = _sh(tmp_path, detach.format(t=token) + " echo '{\"ok\": true}'")
    out = tool.run({}, _context(tmp_path))
    assert json.loads(out.content) == {"ok": True}
    assert _processes_with(f"sleep {token}") == []


def test_the_group_is_ended_after_a_failing_call_too(tmp_path: Path) -> None:
    token = f"{5000 + os.getpid() % 1000}.31"
    tool = _sh(tmp_path, f"nohup sleep {token} >/dev/null 2>&1 & exit 3")
    with pytest.raises(ToolFailedError, match="exited with status 3"):
        tool.run({}, _context(tmp_path))
    assert _processes_with(f"sleep {token}") == []


def _env_of(tool: CommandTool, tmp_path: Path) -> dict[str, str]:
    out = tool.run({}, _context(tmp_path))
    value: dict[str, str] = json.loads(out.content)
    return value


# The venv's interpreter, not a `python3` shim that edits PATH on its way.
ENV_DUMP = [sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))"]


def test_a_tool_sees_no_secret_it_does_not_declare(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "planted-openai-key-123")
    monkeypatch.setenv("GITHUB_TOKEN", "planted-github-token-123")
    monkeypatch.setenv("LC_TIME", "C")
    seen = _env_of(_tool(tmp_path, ENV_DUMP), tmp_path)
    assert "OPENAI_API_KEY" not in seen and "GITHUB_TOKEN" not in seen
    assert "planted" not in json.dumps(seen)
    assert seen["PATH"] == os.environ["PATH"] and seen["LC_TIME"] == "C"

    declared = _env_of(_tool(tmp_path, ENV_DUMP, env=["OPENAI_API_KEY", "UNSET_VAR"]), tmp_path)
    assert declared["OPENAI_API_KEY"] == "planted-openai-key-123"
    assert "GITHUB_TOKEN" not in declared and "UNSET_VAR" not in declared


def test_output_past_the_cap_is_a_tool_error_and_reading_stops(tmp_path: Path) -> None:
    # `yes` never ends: only a reader that stops at the cap returns at all.
    token = f"endless-{os.getpid()}"
    with pytest.raises(ToolFailedError, match=r"output truncated: .* more than 1000 bytes"):
        _tool(tmp_path, ["yes", token], max_output_bytes=1000).run({}, _context(tmp_path))
    assert _processes_with(f"yes {token}") == []


def test_the_cap_comes_from_the_tool_else_the_settings(tmp_path: Path) -> None:
    script = "python3 -c \"print('[' + '1,' * 100 + '1]')\""
    with pytest.raises(ToolFailedError, match="more than 50 bytes"):
        _sh(tmp_path, script).run({}, _context(tmp_path, tool_output_limit=50))
    out = _sh(tmp_path, script, max_output_bytes=10_000).run(
        {}, _context(tmp_path, tool_output_limit=50)
    )
    assert len(json.loads(out.content)) == 101
    with pytest.raises(ToolFailedError, match="more than 1 MB"):
        _sh(tmp_path, "head -c 1000001 /dev/zero").run({}, _context(tmp_path))


def test_output_that_is_not_utf8_is_read_with_replacement(tmp_path: Path) -> None:
    (tmp_path / "latin1.json").write_bytes(b'"caf\xe9"')
    out = _tool(tmp_path, ["cat", "latin1.json"]).run({}, _context(tmp_path))
    assert json.loads(out.content) == "caf\ufffd"


def test_a_program_that_cannot_start_is_a_tool_error(tmp_path: Path) -> None:
    with pytest.raises(ToolFailedError, match="cannot start no-such-program-x: not found"):
        _tool(tmp_path, ["no-such-program-x"]).run({}, _context(tmp_path))
    script = tmp_path / "tool.sh"
    script.write_text("#!/bin/sh\necho 1\n")
    script.chmod(stat.S_IRUSR | stat.S_IWUSR)
    with pytest.raises(ToolFailedError, match=r"cannot start .*tool\.sh: Permission denied"):
        _tool(tmp_path, ["./tool.sh"]).run({}, _context(tmp_path))


def test_large_arguments_reach_a_command_that_reads_them(tmp_path: Path) -> None:
    # More than a pipe buffer each way: writing and reading must interleave.
    tool = _tool(tmp_path, ["python3", "-c", "import sys; sys.stdout.write(sys.stdin.read())"])
    out = tool.run({"text": "x" * 300_000}, _context(tmp_path))
    assert json.loads(out.content) == {"text": "x" * 300_000}


def test_a_command_that_ignores_its_input_is_no_error(tmp_path: Path) -> None:
    out = _sh(tmp_path, "echo 7").run({"text": "x" * 300_000}, _context(tmp_path))
    assert out.content == "7"


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    payload=st.one_of(
        st.binary(max_size=2048),
        st.integers(min_value=1, max_value=20_000).map(lambda n: b"[" * n + b"]" * n),
        st.integers(min_value=0, max_value=5000).map(lambda n: b'"' + b"\xff\xfe" * n + b'"'),
        st.binary(min_size=1, max_size=8).map(lambda b: b * 1000),
    )
)
def test_any_bytes_a_command_prints_end_as_a_tool_result(tmp_path: Path, payload: bytes) -> None:
    data = tmp_path / "out.bin"
    data.write_bytes(payload)
    tool = _tool(tmp_path, ["cat", str(data)], max_output_bytes=4096)
    try:
        out = tool.run({}, _context(tmp_path))
    except ToolFailedError as exc:
        assert str(exc)
    else:
        assert isinstance(out, ToolOutput) and len(out.content.encode()) <= 4096


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"command": ["true"], "env": ["NOT A NAME"]}, "string_pattern_mismatch"),
        ({"command": ["true"], "max_output_bytes": 0}, "greater_than_equal"),
        ({"fixture": "f.json", "key": "k", "env": ["HOME"]}, "only to a command or python"),
    ],
)
def test_env_and_max_output_bytes_are_checked(fields: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValidationError) as caught:
        ToolDecl(name="t", description="d", **fields)
    assert problem in json.dumps(caught.value.errors(include_url=False), default=str)


def test_what_a_killed_launcher_leaves_is_found_by_its_token(tmp_path: Path) -> None:
    # The command SIGKILLs the supervisor it runs under, so no cleanup runs there: evalctl
    # still finds the call's processes by the token in their environment.
    token = f"{6000 + os.getpid() % 1000}.41"
    script = f"nohup sleep {token} >/dev/null 2>&1 & kill -9 $PPID; echo 1"
    with pytest.raises(ToolFailedError, match="exited with status -9"):
        _sh(tmp_path, script).run({}, _context(tmp_path))
    assert _processes_with(f"sleep {token}") == []
