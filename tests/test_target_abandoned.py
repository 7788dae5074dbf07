"""A python target's call abandoned at its deadline keeps running (Python cannot stop a
thread), but once its case is over it can no longer move evalctl's working directory nor
write into its streams; with nothing of the application left running, closing the target
puts every hook back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from evalctl.chat import CompletionRequest, Message, Role
from evalctl.providers.targets.config import PythonTarget
from evalctl.providers.targets.python_target import PythonTargetProvider
from tests.target_helpers import unique, write

APP = """
import os, sys, threading

release = threading.Event()
done = threading.Event()
seen = []

def answer(doc):
    if doc["prompt"] == "late":
        release.wait()
        try:
            os.chdir("/")
            seen.append("moved")
        except PermissionError:
            seen.append("chdir refused")
        print("late chatter on stdout")
        sys.stderr.write("late chatter on stderr\\n")
        done.set()
    else:
        os.chdir("/")  # while its case runs: allowed, and undone after the call
        print("chatter during the case")
    return "ok"
"""


def _request(prompt: str) -> CompletionRequest:
    return CompletionRequest(messages=[Message(role=Role.USER, content=prompt)])


def _target(tmp_path: Path) -> tuple[PythonTargetProvider, ModuleType]:
    module = unique("late_app")
    write(tmp_path / f"{module}.py", APP)
    provider = PythonTargetProvider(
        PythonTarget(type="python", function=f"{module}:answer"), tmp_path
    )
    return provider, sys.modules[module]


def test_an_abandoned_call_cannot_move_the_directory_nor_print(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    provider, app = _target(tmp_path)
    before = os.getcwd()
    # The call waits for the test's word, so it is past any deadline, however busy the machine.
    reply = provider.complete(_request("late"), timeout=0.01)
    assert reply.stop_reason == "timeout"
    provider.close()  # the run ends while the abandoned call still runs
    app.release.set()
    assert app.done.wait(120)
    assert app.seen == ["chdir refused"]
    assert os.getcwd() == before
    out, err = capsys.readouterr()
    assert "late chatter" not in out and "late chatter" not in err


CLEAN_CLOSE = """
import os, posix, sys
from pathlib import Path
from evalctl.chat import CompletionRequest, Message, Role
from evalctl.providers.targets.config import PythonTarget
from evalctl.providers.targets.python_target import PythonTargetProvider

stdout, stderr = sys.stdout, sys.stderr
provider = PythonTargetProvider(PythonTarget(type="python", function="app:answer"), Path("."))
request = CompletionRequest(messages=[Message(role=Role.USER, content="now")])
before = os.getcwd()
assert provider.complete(request, timeout=60).content == "ok"
assert os.getcwd() == before
provider.close()
assert os.chdir is posix.chdir and os.fchdir is posix.fchdir
assert sys.stdout is stdout and sys.stderr is stderr
print("put back")
"""


def test_with_nothing_left_running_closing_puts_every_hook_back(tmp_path: Path) -> None:
    # A process of its own: here, another test's application thread may still be running.
    write(tmp_path / "app.py", APP)
    done = subprocess.run(
        [sys.executable, "-c", CLEAN_CLOSE],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "put back\n"
    assert "chatter during the case" in done.stderr
