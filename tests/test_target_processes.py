"""What a target's code may do to evalctl's process, and what a command target leaves behind:
nothing that ends the run early, keeps it alive, corrupts `--json`, or outlives it. Each test
runs the real CLI in a subprocess; every bound waits for an outcome and times nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.cli_helpers import evalctl
from tests.conftest import REPO
from tests.target_helpers import write


def _suite(tmp_path: Path, target: str, ids: list[str]) -> Path:
    cases = "".join(
        f"""
        [[case]]
        id = "{case}"
        input = {{ prompt = "{case}" }}
        [[case.assert]]
        type = "contains"
        value = "ok"
        """
        for case in ids
    )
    return write(
        tmp_path / "suite.toml",
        f"""
        [suite]
        name = "proc"
        kind = "assert"
        max_turns = 1
        target = {target}
        """
        + cases,
    )


def _results(tmp_path: Path, out: str = "out") -> dict[str, tuple[str, str]]:
    data = json.loads((tmp_path / out / "results.json").read_text())
    return {c["id"]: (c["status"], c.get("error") or "") for c in data["cases"]}


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
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


PYTHON_APP = """
import os, threading, time
from concurrent.futures import ThreadPoolExecutor

def answer(doc):
    prompt = doc["prompt"]
    if prompt == "pool":
        # A worker left busy for ever: concurrent.futures would join it at exit.
        ThreadPoolExecutor(1).submit(threading.Event().wait)
    if prompt == "prints":
        print("chatter from the application")
        os.system("echo chatter from a program it starts")
    elif prompt == "thread":
        threading.Thread(target=time.sleep, args=(3600,), daemon=False).start()
    elif prompt == "exits":
        os._exit(0)
    elif prompt == "chdir":
        os.chdir("/")
    return "ok " + prompt
"""


def test_a_python_target_cannot_end_hold_or_corrupt_the_run(tmp_path: Path) -> None:
    write(tmp_path / "app.py", PYTHON_APP)
    suite = _suite(
        tmp_path, '{ type = "python", function = "app:answer" }',
        ["prints", "thread", "pool", "exits", "chdir", "fine"],
    )  # fmt: skip
    # A relative --out: a target's os.chdir must not move where the results go. The helper's
    # own bound (120 s) is what a non-daemon thread sleeping an hour, or an executor's worker
    # joined at exit, would run into.
    ran = evalctl(tmp_path, "run", "--cases", str(suite), "--out", "out", "--json")
    assert ran.returncode == 3, ran.stdout + ran.stderr
    printed = json.loads(ran.stdout)  # nothing but evalctl's JSON on stdout
    assert printed
    assert "chatter from the application" in ran.stderr
    got = _results(tmp_path)
    assert got["exits"][0] == "error" and "os._exit(0)" in got["exits"][1]
    for case in ("prints", "thread", "pool", "chdir", "fine"):
        assert got[case] == ("pass", ""), (case, got[case])


COMMAND_APP = """
import json, os, subprocess, sys, time
prompt = json.load(sys.stdin)["prompt"]
pid_file = os.environ["PID_FILE"]
if prompt == "background":
    # A child that keeps the reply's pipe open long after the answer.
    child = subprocess.Popen(["sleep", "4711"])
    with open(pid_file + ".bg", "w") as fh:
        fh.write(str(child.pid))
elif prompt == "setsid":
    # A child in a session of its own, off the target's process group.
    subprocess.Popen(["setsid", "sh", "-c", f"echo $$ > {pid_file}; exec sleep 4712"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not (os.path.exists(pid_file) and open(pid_file).read().strip()):
        time.sleep(0.01)
elif prompt == "hangs":
    with open(pid_file, "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(4713)
print(json.dumps({"text": "ok " + prompt}))
"""


def _command_suite(tmp_path: Path, ids: list[str], timeout_s: int = 60) -> Path:
    write(tmp_path / "app.py", COMMAND_APP)
    argv = f'["{sys.executable}", "app.py"]'
    target = f'{{ type = "command", argv = {argv}, timeout_s = {timeout_s} }}'
    return _suite(tmp_path, target, ids)


def test_a_command_targets_children_neither_hold_the_answer_nor_survive(tmp_path: Path) -> None:
    suite = _command_suite(tmp_path, ["background", "setsid"])
    pid_file = tmp_path / "child.pid"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PID_FILE": str(pid_file)}
    ran = subprocess.run(
        [sys.executable, "-m", "evalctl.cli", "run", "--cases", str(suite), "--out", "out"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    # The background child held stdout for an hour: the answer came when the program exited.
    assert _results(tmp_path) == {"background": ("pass", ""), "setsid": ("pass", "")}
    child = int(pid_file.read_text())
    _wait_for(lambda: not _alive(child))
    background = int((tmp_path / "child.pid.bg").read_text())
    _wait_for(lambda: not _alive(background))


def test_a_sigkilled_run_takes_its_command_target_with_it(tmp_path: Path) -> None:
    suite = _command_suite(tmp_path, ["hangs"], timeout_s=600)
    pid_file = tmp_path / "target.pid"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PID_FILE": str(pid_file)}
    run = subprocess.Popen(
        [sys.executable, "-m", "evalctl.cli", "run", "--cases", str(suite), "--out", "out"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        target = int(_wait_for(lambda: pid_file.is_file() and pid_file.read_text().strip()))
        run.send_signal(signal.SIGKILL)
        run.wait()
        _wait_for(lambda: not _alive(target))
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


def test_a_command_target_past_its_deadline_is_killed_with_its_group(tmp_path: Path) -> None:
    suite = _command_suite(tmp_path, ["hangs", "fine"], timeout_s=2)
    pid_file = tmp_path / "target.pid"
    env = {**os.environ, "PYTHONPATH": str(REPO), "PID_FILE": str(pid_file)}
    ran = subprocess.run(
        [sys.executable, "-m", "evalctl.cli", "run", "--cases", str(suite), "--out", "out"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert ran.returncode == 3, ran.stdout + ran.stderr
    got = _results(tmp_path)
    assert got["fine"] == ("pass", "")
    assert got["hangs"][0] == "error" and "timed out" in got["hangs"][1]
    _wait_for(lambda: not _alive(int(pid_file.read_text())))
