"""The python and command targets and the function spy, run end to end through the runner:
the spy's records are the calls the application really made (ones that raised included), a
target's own report of its calls is recorded too, and a target that fails or hangs ends its
case in `error`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from evalctl.errors import BadInputError
from tests.cli_helpers import evalctl
from tests.target_helpers import run_suite, unique, write


def _app(tmp_path: Path) -> tuple[str, str]:
    """An application whose tools keep their own log of what really happened."""
    tools, app = unique("shoptools"), unique("shopapp")
    write(
        tmp_path / f"{tools}.py",
        """
        REAL = []

        def lookup(sku, *, verbose=False):
            REAL.append(("lookup", {"sku": sku}, sku.startswith("x")))
            if sku.startswith("x"):
                raise KeyError(sku)
            return {"sku": sku, "stock": len(sku)}

        class Basket:
            def add(self, sku, qty=1):
                REAL.append(("add", {"sku": sku, "qty": qty}, False))
                return qty * 2
        """,
    )
    write(
        tmp_path / f"{app}.py",
        f"""
        import asyncio
        import {tools} as tools
        from {tools} import lookup   # bound before any case: the spy must still see it

        def answer(request):
            found = []
            for sku in request["prompt"].split():
                try:
                    found.append(lookup(sku))
                except KeyError:
                    found.append(None)
            tools.Basket().add("a1", qty=3)
            return "stock " + " ".join(str(f["stock"]) if f else "none" for f in found)

        async def answer_async(request):
            await asyncio.sleep(0)
            return {{"text": "async " + request["prompt"], "usage": {{"output_tokens": 2}}}}

        def reports(request):
            return {{"text": "reported", "tool_calls": [
                {{"name": "lookup", "arguments": {{"sku": "r1"}}, "result": {{"stock": 7}}}},
            ]}}

        def hangs(request):
            import time
            time.sleep(30)

        def breaks(request):
            raise RuntimeError("database is down")
        """,
    )
    return tools, app


def _suite(
    tmp_path: Path, function: str, spies: str, prompt: str = "a1 x9 bb2", **extra: str
) -> Path:
    table = "\n".join(f"{k} = {v}" for k, v in extra.items())
    return write(
        tmp_path / "suite.toml",
        f"""
        [suite]
        name = "shop"
        kind = "assert"
        max_turns = 1
        {table}
        target = {{ type = "python", function = "{function}" }}
        {spies}

        [[case]]
        id = "one"
        input = {{ prompt = "{prompt}" }}

        [[case.assert]]
        type = "regex"
        pattern = "."
        """,
    )


def test_the_spy_records_the_calls_the_app_really_made(tmp_path: Path) -> None:
    tools, app = _app(tmp_path)
    spies = f"""
        [[suite.spy]]
        function = "{tools}:lookup"
        [[suite.spy]]
        function = "{tools}:Basket.add"
        name = "basket_add"
    """
    suite = _suite(tmp_path, f"{app}:answer", spies)
    result = run_suite(suite, tmp_path / "out")
    (case,) = result.cases
    assert case.status == "pass", case.error
    assert case.output == "stock 2 none 3"
    real = sys.modules[tools].REAL  # the application's own account of its calls
    recorded = [(c.name, c.arguments, c.is_error) for c in case.tool_calls]
    names = {"lookup": "lookup", "add": "basket_add"}
    assert recorded == [(names[n], args, err) for n, args, err in real]
    failed = case.tool_calls[1]
    assert failed.is_error and "KeyError" in failed.result and failed.data == {}
    assert case.tool_calls[0].data == {"value": {"sku": "a1", "stock": 2}}
    assert all(c.duration_ms >= 0 for c in case.tool_calls)
    # The case is over: the originals are back, the module and the early-bound name alike.
    assert sys.modules[tools].lookup.__module__ == tools
    assert not hasattr(sys.modules[tools].lookup, "__wrapped__")
    assert not hasattr(sys.modules[app].lookup, "__wrapped__")
    assert not hasattr(sys.modules[tools].Basket.add, "__wrapped__")


def test_spied_calls_feed_the_tool_assertions(tmp_path: Path) -> None:
    tools, app = _app(tmp_path)
    suite = write(
        tmp_path / "suite.toml",
        f"""
        [suite]
        name = "shop"
        kind = "assert"
        target = {{ type = "python", function = "{app}:answer" }}
        [[suite.spy]]
        function = "{tools}:lookup"

        [[case]]
        id = "cites"
        input = {{ prompt = "a1 bb2" }}
        [[case.assert]]
        type = "tool-called"
        name = "lookup"
        args = {{ sku = "bb2" }}
        [[case.assert]]
        type = "cites-tool-result"
        tool = "lookup"
        path = "stock"

        [[case]]
        id = "never"
        input = {{ prompt = "zz" }}
        [[case.assert]]
        type = "tool-not-called"
        name = "lookup"
        """,
    )
    result = run_suite(suite, tmp_path / "out")
    statuses = {c.id: c.status for c in result.cases}
    assert statuses == {"cites": "pass", "never": "fail"}


def test_async_target_and_structured_reply(tmp_path: Path) -> None:
    _, app = _app(tmp_path)
    result = run_suite(_suite(tmp_path, f"{app}:answer_async", "", prompt="hi"), tmp_path / "o")
    (case,) = result.cases
    assert case.status == "pass" and case.output == "async hi"
    assert case.usage.output_tokens == 2
    assert result.provider.name == "python" and result.provider.model == f"{app}:answer_async"


def test_calls_a_target_reports_are_recorded(tmp_path: Path) -> None:
    _, app = _app(tmp_path)
    (case,) = run_suite(_suite(tmp_path, f"{app}:reports", ""), tmp_path / "o").cases
    assert [(c.name, c.arguments, c.data) for c in case.tool_calls] == [
        ("lookup", {"sku": "r1"}, {"value": {"stock": 7}})
    ]


def test_a_target_that_raises_or_hangs_ends_in_error(tmp_path: Path) -> None:
    _, app = _app(tmp_path)
    broken = run_suite(_suite(tmp_path, f"{app}:breaks", ""), tmp_path / "a").cases[0]
    assert broken.status == "error"
    assert broken.error is not None and "RuntimeError: database is down" in broken.error
    hung = _suite(tmp_path, f"{app}:hangs", "", timeout_s="0.3")
    (case,) = run_suite(hung, tmp_path / "b").cases
    assert case.status == "error" and case.error is not None and "timed out" in case.error


def test_an_unknown_target_function_or_spy_is_bad_input(tmp_path: Path) -> None:
    tools, app = _app(tmp_path)
    with pytest.raises(BadInputError) as missing:
        run_suite(_suite(tmp_path, f"{app}:nothing", ""), tmp_path / "a")
    assert (missing.value.file or "").endswith("suite.toml")
    assert missing.value.field == "suite.target[1].function"
    assert "has no attribute 'nothing'" in str(missing.value)
    spies = f'[[suite.spy]]\nfunction = "{tools}:Basket.remove"'
    with pytest.raises(BadInputError, match="remove") as spy:
        run_suite(_suite(tmp_path, f"{app}:answer", spies), tmp_path / "b")
    assert spy.value.field == "suite.spy[1].function"


def test_provider_naming_a_target_the_suite_lacks_is_bad_input(tmp_path: Path) -> None:
    _, app = _app(tmp_path)
    with pytest.raises(BadInputError, match="declares no http target"):
        run_suite(_suite(tmp_path, f"{app}:answer", ""), tmp_path / "a", provider="http")


def test_command_target(tmp_path: Path) -> None:
    write(
        tmp_path / "app.py",
        """
        import json, sys
        doc = json.load(sys.stdin)
        if doc["prompt"] == "fail":
            print("boom", file=sys.stderr)
            sys.exit(3)
        print(json.dumps({"text": doc["prompt"].upper(), "tool_calls": [
            {"name": "shout", "arguments": {"text": doc["prompt"]}, "result": "ok"}]}))
        """,
    )
    suite = write(
        tmp_path / "suite.toml",
        f"""
        [suite]
        name = "cmd"
        kind = "assert"
        target = {{ type = "command", argv = ["{sys.executable}", "app.py"], tools = ["shout"] }}

        [[case]]
        id = "up"
        input = {{ prompt = "hello" }}
        [[case.assert]]
        type = "equals"
        value = "HELLO"
        [[case.assert]]
        type = "tool-called"
        name = "shout"

        [[case]]
        id = "fails"
        input = {{ prompt = "fail" }}
        [[case.assert]]
        type = "regex"
        pattern = "."
        """,
    )
    result = run_suite(suite, tmp_path / "out")
    up, fails = result.cases
    assert up.status == "pass", up.checks
    assert json.loads(json.dumps(up.tool_calls[0].arguments)) == {"text": "hello"}
    assert fails.status == "error" and fails.error is not None
    assert "status 3" in fails.error and "boom" in fails.error


def test_validate_finds_a_missing_function_without_running_it(tmp_path: Path) -> None:
    tools, app = _app(tmp_path)
    spies = (
        f'[[suite.spy]]\nfunction = "{tools}:Basket.add"\n[[suite.spy]]\nfunction = "{tools}:gone"'
    )
    suite = _suite(tmp_path, f"{app}:missing", spies)
    checked = evalctl(tmp_path, "cases", "validate", str(suite))
    assert checked.returncode == 2
    assert "suite.target[1].function" in checked.stderr and "'missing'" in checked.stderr
    assert "suite.spy[2].function" in checked.stderr and "'gone'" in checked.stderr
    assert "suite.spy[1]" not in checked.stderr
    assert tools not in sys.modules or not hasattr(sys.modules[tools], "REAL")  # not imported


def test_no_tools_exec_refuses_targets_and_spies_that_run_code(tmp_path: Path) -> None:
    tools, app = _app(tmp_path)
    suite = _suite(tmp_path, f"{app}:answer", f'[[suite.spy]]\nfunction = "{tools}:lookup"')
    ran = evalctl(tmp_path, "run", "--cases", str(suite), "--no-tools-exec", "--out", "o")
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert "suite.target[1]" in ran.stderr and "suite.spy[1].function" in ran.stderr
    assert not (tmp_path / "o" / "results.json").exists()


def test_the_input_document(tmp_path: Path) -> None:
    app = unique("echoapp")
    write(
        tmp_path / f"{app}.py",
        """
        import json

        def answer(request):
            return json.dumps(request, sort_keys=True)
        """,
    )
    suite = write(
        tmp_path / "suite.toml",
        f"""
        [suite]
        name = "doc"
        kind = "assert"
        system_prompt = "Be brief."
        target = {{ type = "python", function = "{app}:answer" }}

        [[case]]
        id = "one"
        vars = {{ sku = "a1" }}
        input = {{ messages = [
            {{ role = "user", content = "hi" }},
            {{ role = "assistant", content = "hello" }},
            {{ role = "user", content = "price of a1?" }},
        ] }}
        [[case.assert]]
        type = "json-valid"
        """,
    )
    (case,) = run_suite(suite, tmp_path / "out").cases
    assert json.loads(case.output) == {
        "prompt": "price of a1?",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "price of a1?"},
        ],
        "system": "Be brief.",
        "tools": [],
        "json_schema": None,
        "case": "doc/one",
        "vars": {"sku": "a1"},
        # The request's sampling: greedy, as nothing set it.
        "temperature": 0.0,
        "top_p": 1.0,
        "seed": 0,
    }


def test_a_judge_is_never_sent_to_the_application(tmp_path: Path) -> None:
    tools, app = _app(tmp_path)
    suite = write(
        tmp_path / "suite.toml",
        f"""
        [suite]
        name = "judged"
        kind = "assert"
        target = {{ type = "python", function = "{app}:answer" }}
        [[suite.spy]]
        function = "{tools}:lookup"

        [[case]]
        id = "one"
        input = {{ prompt = "a1" }}
        [[case.assert]]
        type = "judge"
        rubric = "The answer gives a stock level."
        """,
    )
    (case,) = run_suite(suite, tmp_path / "out").cases
    assert case.status == "error"
    judge = next(c for c in case.checks if c.status == "error")
    assert "[judge] provider" in (judge.message or "")
    # The application answered the case once; the judge's request never reached it.
    assert [c.arguments for c in case.tool_calls] == [{"sku": "a1"}]


def test_validate_finds_a_missing_command_target_program(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "suite.toml",
        """
        [suite]
        name = "cmd"
        kind = "assert"
        target = { type = "command", argv = ["./bin/answer", "--fast"] }

        [[case]]
        id = "one"
        input = { prompt = "hi" }
        [[case.assert]]
        type = "regex"
        pattern = "."
        """,
    )
    checked = evalctl(tmp_path, "cases", "validate", str(suite))
    assert checked.returncode == 2
    assert "suite.target[1].argv" in checked.stderr and "program not found" in checked.stderr
