"""`evalctl run` end to end with command tools: planted secrets a tool echoes appear in no
file under the run directory or EVALCTL_HOME nor on stdout/stderr, and a SIGKILLed evalctl
takes its running tool with it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from tests.cli_helpers import evalctl
from tests.conftest import REPO

PLANTED = {
    "GITHUB_TOKEN": "ghp_plantedGithubValue0001",
    "AWS_SECRET_ACCESS_KEY": "plantedAwsSecret/With+Chars&<0002>",
    # Not secret-shaped by name: redacted because evalctl.toml lists it.
    "DEPLOY_HOOK_URL": "https://hooks.example/planted-0003",
}

SUITE = """
[suite]
name = "leaky"
kind = "assert"
system_prompt = "Use the tool."
max_turns = 3
tools = ["leak", "leak_err"]

[[suite.tool]]
name = "leak"
description = "Echoes the environment it was given"
command = ["python3", "-c", "import json, os; print(json.dumps(dict(os.environ)))"]
env = ["GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DEPLOY_HOOK_URL"]
timeout_s = 120

[[suite.tool]]
name = "leak_err"
description = "Fails, saying its secrets on stderr"
command = ["sh", "-c", "echo $GITHUB_TOKEN $AWS_SECRET_ACCESS_KEY $DEPLOY_HOOK_URL >&2; exit 1"]
env = ["GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DEPLOY_HOOK_URL"]
timeout_s = 120

[[case]]
id = "echo"
input = { prompt = "Go" }
[[case.assert]]
type = "contains"
value = "ghp_"
"""

REPLIES = """
[[cases."leaky/echo"]]
tool_calls = [
  { name = "leak", arguments = {} },
  { name = "leak_err", arguments = {} },
]

[[cases."leaky/echo"]]
content = "The token is ghp_plantedGithubValue0001, the hook https://hooks.example/planted-0003"
"""


def _files_under(*roots: Path) -> list[Path]:
    return [p for root in roots for p in root.rglob("*") if p.is_file()]


def test_planted_secrets_reach_no_file_and_no_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, evalctl_home: Path
) -> None:
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "evalctl.toml").write_text('redact_env = ["DEPLOY_HOOK_URL"]\n')
    step_summary = evalctl_home / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    (tmp_path / "leaky.toml").write_text(textwrap.dedent(SUITE))
    (tmp_path / "replies.toml").write_text(REPLIES)
    ran = evalctl(
        tmp_path,
        "run",
        "--provider",
        "scripted",
        "--script",
        "replies.toml",
        "--cases",
        "leaky.toml",
        "--out",
        "out",
        "--junit",
        "out/junit.xml",
        "--markdown",
        "out/summary.md",
        "--json",
    )
    assert ran.returncode in (0, 1), ran.stderr
    report = evalctl(tmp_path, "report", "out/results.json", "--html", "out/report.html")
    assert report.returncode == 0, report.stderr

    case = json.loads((tmp_path / "out" / "results.json").read_text())["cases"][0]
    leak, leak_err = case["tool_calls"]
    # The tool did get what it declared, and the record shows it was there, masked.
    assert leak["data"]["value"]["GITHUB_TOKEN"] == "[REDACTED:GITHUB_TOKEN]"
    assert "[REDACTED:AWS_SECRET_ACCESS_KEY]" in leak_err["result"]
    assert "[REDACTED:DEPLOY_HOOK_URL]" in leak_err["result"]

    written = _files_under(tmp_path / "out", evalctl_home)
    assert {p.name for p in written} >= {
        "results.json",
        "results.toml",
        "journal.jsonl",
        "junit.xml",
        "summary.md",
        "report.html",
        "step-summary.md",
    }
    streams = ran.stdout + ran.stderr + report.stdout + report.stderr
    for value in PLANTED.values():
        assert value not in streams
        for path in written:
            assert value.encode() not in path.read_bytes(), path


def test_a_sigkilled_run_takes_its_running_tool_with_it(tmp_path: Path) -> None:
    pid_file = tmp_path / "tool.pid"
    (tmp_path / "slow.toml").write_text(
        textwrap.dedent(
            f"""
            [suite]
            name = "slow"
            kind = "assert"
            system_prompt = "Use the tool."
            tools = ["hang"]

            [[suite.tool]]
            name = "hang"
            description = "Writes its pid, then never ends"
            command = ["sh", "-c", "echo $$ > {pid_file}; exec sleep 4711"]
            timeout_s = 600

            [[case]]
            id = "hang"
            input = {{ prompt = "Go" }}
            [[case.assert]]
            type = "contains"
            value = "x"
            """
        )
    )
    (tmp_path / "replies.toml").write_text(
        '[[cases."slow/hang"]]\ntool_calls = [{ name = "hang", arguments = {} }]\n'
        '[[cases."slow/hang"]]\ncontent = "x"\n'
    )
    argv = ["run", "--provider", "scripted", "--script", "replies.toml", "--cases", "slow.toml"]
    run = subprocess.Popen(
        [sys.executable, "-m", "evalctl.cli", *argv, "--out", "out"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Generous bounds on a busy machine: these wait for events, they time nothing.
        tool_pid = _wait_for(lambda: pid_file.is_file() and pid_file.read_text().strip())
        tool = psutil.Process(int(tool_pid))
        run.send_signal(signal.SIGKILL)
        run.wait()
        _wait_for(lambda: not _alive(tool))
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_for(condition: object, bound_s: float = 120.0) -> str:
    assert callable(condition)
    end = time.monotonic() + bound_s
    while time.monotonic() < end:
        value = condition()
        if value:
            return str(value)
        time.sleep(0.05)
    raise AssertionError("the condition never held")
