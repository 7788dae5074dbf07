"""Python tools run in a worker process evalctl can stop: whatever the tool does (`os.chdir`,
`sys.exit`, `print()`, KeyboardInterrupt, a C call that never returns, a value nested too
deep or not JSON) is a tool error or stays in the worker, and no worker outlives its tool.
`python_tool_problems` checks a declaration without running any of its code."""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalctl.assertions.kind import AssertInput, NoExpected
from evalctl.cases.schema import Case
from evalctl.cases.tooldecl import ToolDecl
from evalctl.config import Settings
from evalctl.tools.base import ToolContext, ToolFailedError
from evalctl.tools.output import MAX_VALUE_NESTING as MAX_NESTING
from evalctl.tools.python_tool import PythonTool, python_tool_problems

TOOLS = """\
import os, signal, sys, time

def where():
    return os.getcwd()

def move(to):
    os.chdir(to)
    return os.getcwd()

def leave(code=0):
    sys.exit(code)

def interrupt():
    raise KeyboardInterrupt

def chatty():
    print("HELLO FROM THE TOOL")
    return "said hello"

def pause():
    signal.pause()  # a C call that never returns; SIGTERM is ignored below

def nap():
    import ctypes
    ctypes.CDLL(None).sleep(3600)  # blocked in C, not in Python

def nest(depth):
    value = "leaf"
    for _ in range(depth):
        value = [value]
    return value

def weird(kind):
    return {"set": {1}, "bytes": b"x", "object": object(), "tuple": (1, 2),
            "surrogate": "a\\udcffb"}[kind]

def echo(value):
    return value

def pid():
    return os.getpid()

def boom(message):
    raise LookupError(message)

def ask():
    return input()

def shout(megabytes):
    for _ in range(megabytes * 1024):
        print("x" * 1023)
    sys.stderr.write("done shouting\\n")
    return "hoarse"

def vanish(code):
    print("about to go")
    os._exit(code)

signal.signal(signal.SIGTERM, signal.SIG_IGN)
"""


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True) if p.is_running()}


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    (tmp_path / "probe_tools.py").write_text(TOOLS)
    return tmp_path


@pytest.fixture(autouse=True)
def no_worker_left() -> Iterator[None]:
    before = _children()
    yield
    left = {pid for pid in _children() - before if psutil.Process(pid).status() != "zombie"}
    assert not left, f"processes left behind: {left}"


def context(deadline: float | None = None) -> ToolContext:
    case = Case(
        suite="s",
        id="c",
        description="",
        features=[],
        input=AssertInput(prompt="?"),
        expected=NoExpected(),
        checks=[],
        timeout_s=None,
    )
    return ToolContext(case=case, fixtures_dir=Path("."), settings=Settings(), deadline=deadline)


def tool(suite_dir: Path, function: str, timeout_s: float = 120) -> PythonTool:
    decl = ToolDecl(
        name=function, description="", python=f"probe_tools:{function}", timeout_s=timeout_s
    )
    return PythonTool(decl, suite_dir)


def call(tool_: PythonTool, **arguments: Any) -> Any:
    try:
        return tool_.run(arguments, context()).data["value"]
    finally:
        tool_.close()


def failure(tool_: PythonTool, **arguments: Any) -> str:
    with pytest.raises(ToolFailedError) as info:
        call(tool_, **arguments)
    return str(info.value)


def test_a_tool_that_changes_directory_changes_only_its_worker(suite_dir: Path) -> None:
    here = os.getcwd()
    mover = tool(suite_dir, "move")
    try:
        assert mover.run({"to": str(suite_dir)}, context()).data["value"] == str(suite_dir)
        assert os.getcwd() == here
    finally:
        mover.close()


def test_sys_exit_in_a_tool_is_a_tool_error(suite_dir: Path) -> None:
    assert failure(tool(suite_dir, "leave"), code=0) == "the tool called sys.exit(0)"


def test_sys_exit_while_the_module_imports_is_a_tool_error(tmp_path: Path) -> None:
    (tmp_path / "exits.py").write_text("import sys\nsys.exit(0)\ndef f():\n    return 1\n")
    decl = ToolDecl(name="f", description="", python="exits:f")
    message = failure(PythonTool(decl, tmp_path))
    assert message == "importing 'exits' called sys.exit(0)"


def test_keyboard_interrupt_in_a_tool_is_a_tool_error(suite_dir: Path) -> None:
    assert failure(tool(suite_dir, "interrupt")) == "the tool raised KeyboardInterrupt"


def test_an_exception_is_a_tool_error_and_the_worker_stays(suite_dir: Path) -> None:
    t = tool(suite_dir, "boom")
    try:
        with pytest.raises(ToolFailedError, match="LookupError: no order Z-9"):
            t.run({"message": "no order Z-9"}, context())
        with pytest.raises(ToolFailedError, match="LookupError: again"):
            t.run({"message": "again"}, context())
    finally:
        t.close()


def test_a_worker_that_dies_mid_call_is_a_tool_error_and_is_replaced(suite_dir: Path) -> None:
    t = tool(suite_dir, "vanish")
    try:
        with pytest.raises(ToolFailedError) as info:
            t.run({"code": 7}, context())
        assert str(info.value) == (
            "the tool's process ended with status 7 during the call: about to go"
        )
        with pytest.raises(ToolFailedError, match="status 8"):  # a fresh worker took the call
            t.run({"code": 8}, context())
    finally:
        t.close()


def test_a_tool_that_prints_megabytes_still_returns(
    suite_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # What it prints is read as it comes (never blocking the tool on a full pipe) and dropped.
    assert call(tool(suite_dir, "shout"), megabytes=5) == "hoarse"
    assert "x" * 1023 not in capfd.readouterr().out


def test_input_in_a_tool_reads_nothing_and_the_next_call_still_works(suite_dir: Path) -> None:
    t = tool(suite_dir, "ask")
    try:
        for _ in range(2):  # the protocol's next line was not taken for the tool's input
            with pytest.raises(ToolFailedError, match="EOFError"):
                t.run({}, context())
    finally:
        t.close()


def test_print_in_a_tool_never_reaches_evalcts_stdout(
    suite_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert call(tool(suite_dir, "chatty")) == "said hello"
    assert "HELLO FROM THE TOOL" not in capfd.readouterr().out


@pytest.mark.parametrize("function", ["pause", "nap"])
def test_a_tool_stuck_in_a_c_call_is_killed_and_the_next_call_gets_a_new_worker(
    suite_dir: Path, function: str
) -> None:
    # The tool ignores SIGTERM, as the probe did: only SIGKILL stops it.
    stuck = tool(suite_dir, function, timeout_s=0.5)
    with pytest.raises(ToolFailedError, match=r"timed out after 0.5s"):
        call(stuck)
    stuck_then_fine = PythonTool(
        ToolDecl(name="pid", description="", python="probe_tools:pid", timeout_s=0.5),
        suite_dir,
    )
    assert isinstance(call(stuck_then_fine), int)


def test_ctrl_c_during_a_call_stops_its_worker(suite_dir: Path) -> None:
    import signal
    import threading

    stuck = tool(suite_dir, "pause", timeout_s=600)
    # SIGINT reaches the main thread wherever it is: starting the worker or waiting on it.
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            stuck.run({}, context())
    finally:
        timer.cancel()
        stuck.close()
    # no_worker_left: the interrupted call's worker is gone, not only at evalctl's exit.


def test_the_case_deadline_bounds_a_call(suite_dir: Path) -> None:
    import time

    stuck = tool(suite_dir, "pause", timeout_s=600)
    try:
        with pytest.raises(ToolFailedError, match="timed out"):
            stuck.run({}, context(deadline=time.monotonic() + 0.5))
        with pytest.raises(ToolFailedError, match="the case has no time left"):
            stuck.run({}, context(deadline=time.monotonic() - 1))
    finally:
        stuck.close()


def test_a_value_nested_past_the_limit_is_a_tool_error(suite_dir: Path) -> None:
    message = failure(tool(suite_dir, "nest"), depth=100_000)
    assert message == f"the tool returned a value nested more than {MAX_NESTING} levels deep"
    assert call(tool(suite_dir, "nest"), depth=MAX_NESTING) is not None


@pytest.mark.parametrize("kind", ["set", "bytes", "object"])
def test_a_value_that_is_not_json_is_a_tool_error(suite_dir: Path, kind: str) -> None:
    assert "not JSON" in failure(tool(suite_dir, "weird"), kind=kind)


def test_text_that_is_not_unicode_comes_back_replaced(suite_dir: Path) -> None:
    value = call(tool(suite_dir, "weird"), kind="surrogate")
    assert value.startswith("a") and value.endswith("b") and "\ufffd" in value
    assert call(tool(suite_dir, "weird"), kind="tuple") == [1, 2]


def test_a_worker_serves_calls_until_the_tool_is_closed(suite_dir: Path) -> None:
    t = tool(suite_dir, "pid")
    try:
        first = t.run({}, context()).data["value"]
        assert t.run({}, context()).data["value"] == first
        assert first in _children()
    finally:
        t.close()
    assert first not in _children()


def test_two_suites_with_same_named_python_modules_each_call_their_own(tmp_path: Path) -> None:
    # Each python tool runs in a worker of its own: a module name two suites use cannot
    # resolve to the other suite's module.
    answers = []
    for name, answer in (("a", 1), ("b", 2)):
        pkg = tmp_path / name / "dup_named_tools"
        pkg.mkdir(parents=True)
        (pkg / "__init__.py").write_text(f"def answer():\n    return {answer}\n")
        decl = ToolDecl(name="answer", description="", python="dup_named_tools:answer")
        answers.append(call(PythonTool(decl, tmp_path / name)))
    assert answers == [1, 2]


# Leaves hypothesis builds: every JSON scalar, strings of any code point included.
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=50,
)


@pytest.fixture
def echo_tool(suite_dir: Path) -> Iterator[PythonTool]:
    # One worker serves every example of a test: it must stay sound call after call.
    t = tool(suite_dir, "echo")
    yield t
    t.close()


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=_VALUES)
def test_fuzz_any_json_value_comes_back_as_it_was(echo_tool: PythonTool, value: Any) -> None:
    output = echo_tool.run({"value": value}, context())
    assert output.data["value"] == json.loads(json.dumps(value))
    assert json.loads(output.content) == output.data["value"]


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(depth=st.integers(min_value=0, max_value=5 * MAX_NESTING), size=st.integers(0, 2000))
def test_fuzz_depth_and_size_give_a_value_or_a_tool_error(
    echo_tool: PythonTool, depth: int, size: int
) -> None:
    value: Any = "x" * size
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    try:
        returned = echo_tool.run({"value": value}, context()).data["value"]
    except ToolFailedError as exc:
        assert depth > MAX_NESTING, exc
        assert "nested more than" in str(exc)
    else:
        assert depth <= MAX_NESTING
        assert returned == value


def test_validate_reads_a_module_without_running_it(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    (tmp_path / "sidefx.py").write_text(
        textwrap.dedent(
            f"""\
            open({str(marker)!r}, "w").close()
            import sys
            sys.exit(0)
            def present():
                pass
            if sys.platform:
                conditional = 1
            """
        )
    )
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (pkg / "mod.py").write_text("from json import dumps as present\n")
    (tmp_path / "starry.py").write_text("from os.path import *\n")
    assert python_tool_problems("sidefx:present", tmp_path) == []
    assert python_tool_problems("sidefx:conditional", tmp_path) == []
    assert python_tool_problems("pkg.mod:present", tmp_path) == []
    assert python_tool_problems("starry:anything", tmp_path) == []  # cannot tell: allowed
    assert python_tool_problems("json:dumps", tmp_path) == []
    assert python_tool_problems("sidefx:absent", tmp_path) == [
        "module 'sidefx' has no attribute 'absent'"
    ]
    assert python_tool_problems("nowhere_at_all:f", tmp_path) == [
        f"module 'nowhere_at_all' not found in {tmp_path} or on sys.path"
    ]
    assert python_tool_problems("pkg.missing:f", tmp_path)[0].startswith("module 'pkg.missing'")
    assert not marker.exists()


RUN_SUITE = """\
[suite]
name = "probe"
kind = "assert"
tools = ["nap"]
max_turns = 2

[[suite.tool]]
name = "nap"
description = "nap"
parameters = { type = "object", properties = {} }
python = "napper:nap"
timeout_s = 600

[[case]]
id = "nap"
input = { prompt = "nap" }
[[case.assert]]
type = "contains"
value = "awake"
"""

RUN_SCRIPT = """\
[[cases."probe/nap"]]
tool_calls = [{ name = "nap", arguments = {} }]
[[cases."probe/nap"]]
content = "awake"
"""


def _napper(root: Path, seconds: float) -> None:
    (root / "napper.py").write_text(
        "import pathlib, time\n"
        "def nap():\n"
        f"    pathlib.Path({str(root / 'started')!r}).touch()\n"
        f"    time.sleep({seconds})\n"
        "    return 'rested'\n"
    )
    (root / "probe.toml").write_text(RUN_SUITE)
    (root / "script.toml").write_text(RUN_SCRIPT)


def test_an_in_process_run_leaves_no_worker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.cli_helpers import run_cli

    _napper(tmp_path, 0)
    ran = run_cli(
        capsys, "run", "--provider", "scripted", "--script", str(tmp_path / "script.toml"),
        "--cases", str(tmp_path / "probe.toml"), "--out", str(tmp_path / "out"), "--no-progress",
    )  # fmt: skip
    assert ran.code == 0, ran.err
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["cases"][0]["tool_calls"][0]["data"]["value"] == "rested"
    # no_worker_left checks that the run's worker is gone with the run.


def test_a_killed_evalctl_takes_its_python_tool_worker_with_it(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests.bounded_helpers import leftovers
    from tests.cli_helpers import REPO

    _napper(tmp_path, 3600)
    run = subprocess.Popen(
        [sys.executable, "-m", "evalctl.cli", "run", "--provider", "scripted", "--script",
         "script.toml", "--cases", "probe.toml", "--out", "out", "--no-progress"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    guard = time.monotonic() + 120  # against a hung child, not a timing check
    while not (tmp_path / "started").exists() and run.poll() is None:
        assert time.monotonic() < guard, "the tool never started"
        time.sleep(0.05)
    assert leftovers(str(tmp_path)), "the worker should be running"
    run.send_signal(signal.SIGKILL)
    run.wait()
    guard = time.monotonic() + 60
    while leftovers(str(tmp_path)) and time.monotonic() < guard:
        time.sleep(0.05)
    assert not leftovers(str(tmp_path))
