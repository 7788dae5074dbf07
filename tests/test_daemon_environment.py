"""The daemon's PYTHONPATH: this evalctl importable, and the user's own entries kept ahead of
an installed evalctl's site-packages (a llama.cpp build put first must stay first)."""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

import pytest

import evalctl
from evalctl.lifecycle.manager import daemon_environment

CHECKOUT = Path(evalctl.__file__).resolve().parents[1]


def test_a_checkout_goes_first_and_the_users_entries_follow() -> None:
    env = daemon_environment({"PYTHONPATH": "/opt/other-llama", "HOME": "/h"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(CHECKOUT), "/opt/other-llama"]
    assert env["HOME"] == "/h"


def test_an_installed_evalctl_leaves_the_users_pythonpath_as_it_is(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As if evalctl lived in the interpreter's site-packages (a non-editable install): the
    # interpreter finds it without help, and the user's PYTHONPATH keeps its order.
    paths = {**sysconfig.get_paths(), "purelib": str(CHECKOUT), "platlib": str(CHECKOUT)}
    monkeypatch.setattr(sysconfig, "get_paths", lambda: paths)
    assert daemon_environment({"PYTHONPATH": "/opt/other-llama"})["PYTHONPATH"] == (
        "/opt/other-llama"
    )
    assert "PYTHONPATH" not in daemon_environment({})
