"""Spies are transparent: whatever a spied function takes or returns (a cycle, a tuple-keyed
dict, a huge value, a generator, an object whose repr raises), the application gets exactly
what it would have without the spy, and the case records a bounded, JSON-safe copy; a spy on
a function evalctl itself uses is refused before any case runs, and one installed anyway
records its call once instead of recursing through evalctl's own use of it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from evalctl.calllog import collecting
from evalctl.cases.schema import SpyDecl
from evalctl.tools.spy_functions import spying
from tests.cli_helpers import evalctl
from tests.target_helpers import run_suite, unique, write

ODD = """
class Loud:
    def __repr__(self):
        raise RuntimeError("no repr for you")

def cycle():
    looped = {"name": "loop"}
    looped["self"] = looped
    return looped

def tuple_keys():
    return {("a", 1): "pair", 2: "two", None: "none"}

def huge():
    return list(range(1_000_000))

def long_text():
    return "x" * 10_000_000

def numbers():
    return [float("nan"), float("inf"), 10**400]

def lazy():
    return (n for n in range(3))

def loud(arg):
    return Loud()

def deep():
    value = []
    for _ in range(100_000):
        value = [value]
    return value
"""


def _module(tmp_path: Path) -> str:
    name = unique("odd")
    write(tmp_path / f"{name}.py", ODD)
    return name


def test_the_application_gets_what_it_would_without_the_spy(tmp_path: Path) -> None:
    mod = _module(tmp_path)
    names = ["cycle", "tuple_keys", "huge", "long_text", "numbers", "lazy", "loud", "deep"]
    spies = [SpyDecl(function=f"{mod}:{n}") for n in names]
    with collecting() as log, spying(spies, tmp_path):
        m = sys.modules[mod]
        looped = m.cycle()
        assert looped["self"] is looped
        assert m.tuple_keys()[("a", 1)] == "pair"
        assert len(m.huge()) == 1_000_000
        assert len(m.long_text()) == 10_000_000
        assert m.numbers()[2] == 10**400
        assert list(m.lazy()) == [0, 1, 2]  # the generator was not consumed by the spy
        assert type(m.loud(m.Loud())).__name__ == "Loud"
        m.deep()
    calls = {c.name: c for c in log.calls()}
    assert sorted(calls) == sorted(names)
    assert calls["cycle"].value == {"name": "loop", "self": "<cycle: dict>"}
    assert calls["tuple_keys"].value == {"('a', 1)": "pair", "2": "two", "null": "none"}
    assert len(calls["huge"].value) == 10_001  # cut at 10,000 entries, and marked as cut
    assert calls["huge"].value[-1].startswith("<cut: more than")
    assert len(calls["long_text"].value) < 200_000 and "more characters" in calls["long_text"].value
    assert calls["numbers"].value == ["nan", "inf", "<int of 1329 bits>"]
    assert calls["lazy"].value.startswith("<generator object")
    assert calls["loud"].value == "<Loud>" and calls["loud"].arguments == {"arg": "<Loud>"}
    for call in calls.values():
        assert not call.is_error
        json.dumps(call.value, allow_nan=False)  # JSON-safe, as recorded
        json.dumps(call.arguments, allow_nan=False)
        assert len(call.result) < 2_000_000


def test_a_spied_run_records_what_it_can_and_writes_its_results(tmp_path: Path) -> None:
    mod = _module(tmp_path)
    app = unique("oddapp")
    write(
        tmp_path / f"{app}.py",
        f"""
        import {mod} as odd

        def answer(doc):
            odd.cycle()
            odd.tuple_keys()
            odd.numbers()
            odd.deep()
            return "ok"
        """,
    )
    suite = write(
        tmp_path / "suite.toml",
        f"""
        [suite]
        name = "spied"
        kind = "assert"
        target = {{ type = "python", function = "{app}:answer" }}
        [[suite.spy]]
        function = "{mod}:cycle"
        [[suite.spy]]
        function = "{mod}:tuple_keys"
        [[suite.spy]]
        function = "{mod}:numbers"
        [[suite.spy]]
        function = "{mod}:deep"

        [[case]]
        id = "one"
        input = {{ prompt = "go" }}
        [[case.assert]]
        type = "tool-called"
        name = "cycle"
        """,
    )
    (case,) = run_suite(suite, tmp_path / "out").cases
    assert case.status == "pass", case.error
    assert [c.name for c in case.tool_calls] == ["cycle", "tuple_keys", "numbers", "deep"]
    written = json.loads((tmp_path / "out" / "results.json").read_text())
    assert written["cases"][0]["status"] == "pass"


def test_spying_a_function_evalctl_uses_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "app.py", "def answer(doc):\n    return 'ok'\n")
    suite = write(
        tmp_path / "suite.toml",
        """
        [suite]
        name = "selfspy"
        kind = "assert"
        target = { type = "python", function = "app:answer" }
        [[suite.spy]]
        function = "app:answer"
        [[suite.spy]]
        function = "json:dumps"

        [[case]]
        id = "one"
        input = { prompt = "go" }
        [[case.assert]]
        type = "contains"
        value = "ok"
        """,
    )
    checked = evalctl(tmp_path, "cases", "validate", str(suite))
    assert checked.returncode == 2, checked.stdout + checked.stderr
    assert "suite.spy[2].function" in checked.stderr and "standard library" in checked.stderr
    assert "suite.spy[1]" not in checked.stderr
    ran = evalctl(tmp_path, "run", "--cases", str(suite), "--out", "out")
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "suite.spy[2].function" in ran.stderr and "standard library" in ran.stderr
    assert not (tmp_path / "out" / "results.json").exists()
    pydantic = suite.read_text().replace("json:dumps", "pydantic:BaseModel.model_dump")
    write(suite, pydantic)
    ran = evalctl(tmp_path, "run", "--cases", str(suite), "--out", "out2")
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "suite.spy[2].function" in ran.stderr and "evalctl depends on" in ran.stderr


def test_a_spy_on_what_recording_uses_records_once_without_recursing(tmp_path: Path) -> None:
    # Refused by `run`; installed here directly: the guard still keeps it from recursing.
    with collecting() as log, spying([SpyDecl(function="json:dumps")], tmp_path):
        assert json.dumps({"a": [1, 2]}) == '{"a": [1, 2]}'
    (call,) = log.calls()
    assert call.name == "dumps" and call.value == '{"a": [1, 2]}'
    assert not hasattr(json.dumps, "__wrapped__")
