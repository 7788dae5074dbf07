"""Issue 20's probes on the tools a suite declares, each through a real `evalctl run`: the
case's deadline interrupts a tool call; a python tool's `print()`, `os.chdir` and `sys.exit`
stay in its worker. After each, no process of the run is left."""

from __future__ import annotations

import json
from pathlib import Path

from tests.bounded_helpers import leftovers, run_probe, tool_table, write_probe
from tests.cli_helpers import evalctl

TOOLS = """\
import os, sys, time

def nap(marker):
    time.sleep(3600)

def chatty():
    print("HELLO FROM THE TOOL")
    return {"said": "hello"}

def move():
    os.chdir("/")
    return os.getcwd()

def leave():
    sys.exit(0)
"""


def test_the_case_deadline_interrupts_a_python_and_a_commandtool_table(tmp_path: Path) -> None:
    sleeper = f"import sys, time\\ntime.sleep(3600)  # {tmp_path}"
    suite = (
        """
        [suite]
        name = "probe"
        kind = "assert"
        tools = ["py_nap", "cmd_nap"]
        max_turns = 2
        """
        + tool_table("py_nap", 'python = "probe_tools:nap"')
        + tool_table("cmd_nap", f'command = ["python3", "-c", "{sleeper}"]')
        + """
        [[case]]
        id = "py"
        input = { prompt = "nap" }
        timeout_s = 2
        [[case.assert]]
        type = "contains"
        value = "awake"

        [[case]]
        id = "cmd"
        input = { prompt = "nap" }
        timeout_s = 2
        [[case.assert]]
        type = "contains"
        value = "awake"
        """
    )
    script = """
        [[cases."probe/py"]]
        tool_calls = [{ name = "py_nap", arguments = { marker = "x" } }]
        [[cases."probe/py"]]
        content = "awake"

        [[cases."probe/cmd"]]
        tool_calls = [{ name = "cmd_nap", arguments = {} }]
        [[cases."probe/cmd"]]
        content = "awake"
        """
    write_probe(tmp_path, suite, script)
    (tmp_path / "probe_tools.py").write_text(TOOLS)
    results, _ = run_probe(tmp_path)
    for case in results["cases"]:
        assert case["status"] == "error", case
        assert "timed out" in case["error"]
        [call] = case["tool_calls"]
        assert call["is_error"] and "timed out" in call["result"]


def test_print_chdir_and_exit_in_a_python_tool_stay_in_its_worker(tmp_path: Path) -> None:
    suite = (
        """
        [suite]
        name = "probe"
        kind = "assert"
        tools = ["chatty", "move", "leave"]
        max_turns = 2
        """
        + tool_table("chatty", 'python = "probe_tools:chatty"')
        + tool_table("move", 'python = "probe_tools:move"')
        + tool_table("leave", 'python = "probe_tools:leave"')
        + """
        [[case]]
        id = "all"
        input = { prompt = "go" }
        [[case.assert]]
        type = "contains"
        value = "done"

        [[case]]
        id = "again"
        input = { prompt = "go" }
        [[case.assert]]
        type = "contains"
        value = "done"
        """
    )
    calls = '[{ name = "chatty", arguments = {} }, { name = "move", arguments = {} }, ' + (
        '{ name = "leave", arguments = {} }]'
    )
    script = f"""
        [[cases."probe/all"]]
        tool_calls = {calls}
        [[cases."probe/all"]]
        content = "done"

        [[cases."probe/again"]]
        tool_calls = {calls}
        [[cases."probe/again"]]
        content = "done"
        """
    write_probe(tmp_path, suite, script)
    (tmp_path / "probe_tools.py").write_text(TOOLS)
    results, stdout = run_probe(tmp_path, "--json")
    # Valid JSON on stdout, the tool's print() nowhere in it; the relative --out was written
    # where evalctl started, not where the tool moved to.
    assert json.loads(stdout)["summary"]["passed"] == 2
    assert "HELLO FROM THE TOOL" not in stdout
    for case in results["cases"]:
        assert case["status"] == "pass", case
        chatty, move, leave = case["tool_calls"]
        assert chatty["data"]["value"] == {"said": "hello"} and not chatty["is_error"]
        assert move["data"]["value"] == "/"
        assert leave["is_error"] and leave["result"] == "error: the tool called sys.exit(0)"

    # A resumed run keeps its directory too: the relative paths still point at it.
    resumed = evalctl(tmp_path, "run", "--resume", "out", "--no-progress", "--json")
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["resumed"] is True
    assert (tmp_path / "out" / "results.json").is_file()
    assert not leftovers(str(tmp_path))
