"""Plugin checks run under the case's deadline: one that blocks, raises or calls sys.exit
ends in `error` naming its plugin, and the run goes on (a real `evalctl run`, and the scoring
step alone)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from evalctl.assertions.kind import AssertInput, NoExpected
from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import CompletionResponse
from evalctl.results.models import CheckResult
from evalctl.scoring.check import ScoringContext, Transcript
from evalctl.scoring.score import CheckBounds, evaluate
from tests.bounded_helpers import run_probe, write_probe
from tests.scoring_helpers import context

PLUGIN = """\
import sys, threading
from pydantic import BaseModel, ConfigDict
from evalctl.plugin import CheckResult


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Check:
    params_model = NoParams

    def __init__(self, type_name, body):
        self.type_name = type_name
        self._body = body

    def evaluate(self, params, ctx):
        return self._body()


def _blocks():
    threading.Event().wait()


def _raises():
    raise ValueError("the check's own bug")


def _exits():
    sys.exit(3)


def _interrupts():
    raise KeyboardInterrupt


def register(registry):
    registry.add_check("blocks", _Check("blocks", _blocks))
    registry.add_check("raises", _Check("raises", _raises))
    registry.add_check("exits", _Check("exits", _exits))
    registry.add_check("interrupts", _Check("interrupts", _interrupts))
"""


def test_a_plugin_check_that_blocks_raises_or_exits_ends_in_error_naming_it(
    tmp_path: Path,
) -> None:
    suite = """
        [suite]
        name = "probe"
        kind = "assert"

        [[case]]
        id = "checks"
        input = { prompt = "hi" }
        timeout_s = 1
        [[case.assert]]
        type = "blocks"
        [[case.assert]]
        type = "raises"
        [[case.assert]]
        type = "exits"
        [[case.assert]]
        type = "interrupts"
        [[case.assert]]
        type = "contains"
        value = "hello"
        """
    script = """
        [[cases."probe/checks"]]
        content = "hello"
        """
    write_probe(tmp_path, suite, script)
    (tmp_path / "stuck_checks.py").write_text(PLUGIN)
    (tmp_path / "evalctl.toml").write_text('plugins = ["stuck_checks"]\n')
    results, _ = run_probe(tmp_path)
    [case] = results["cases"]
    assert case["status"] == "error"
    checks = {c["name"]: c for c in case["checks"]}
    assert checks["contains:hello"]["status"] == "pass"
    blocks, raises, exits = checks["blocks"], checks["raises"], checks["exits"]
    assert blocks["status"] == raises["status"] == exits["status"] == "error"
    assert blocks["message"].startswith("check 'blocks' of plugin 'stuck_checks' did not finish")
    assert raises["message"] == (
        "check 'raises' of plugin 'stuck_checks' raised ValueError: the check's own bug"
    )
    assert exits["message"] == "check 'exits' of plugin 'stuck_checks' called sys.exit(3)"
    assert checks["interrupts"]["message"] == (
        "check 'interrupts' of plugin 'stuck_checks' raised KeyboardInterrupt"
    )


class _Waits:
    """A check that blocks until released, as a plugin's might on a lock or a socket."""

    type_name = "waits"
    params_model = NoExpected

    def __init__(self) -> None:
        self.release = threading.Event()

    def evaluate(self, params: Any, ctx: ScoringContext) -> CheckResult:
        self.release.wait()
        return CheckResult(name=self.type_name, status="pass")


def _ctx() -> ScoringContext:
    case = Case(suite="s", id="c", description="", features=[], input=AssertInput(prompt="?"),
                expected=NoExpected(), checks=[], timeout_s=None)  # fmt: skip
    transcript = Transcript([], [CompletionResponse(content="hi")], [])
    return context(case, transcript, SuiteTable(name="s", kind="assert"))


def test_a_plugin_check_past_the_deadline_is_an_error_and_evalctls_own_run_inline() -> None:
    check = _Waits()
    bounds = CheckBounds(deadline=time.monotonic(), floor_s=0.2)
    try:
        result = evaluate(check, NoExpected(), _ctx(), "slow_plugin", bounds)
        assert result.status == "error"
        assert result.message == "check 'waits' of plugin 'slow_plugin' did not finish in 0.2 s"
    finally:
        check.release.set()  # the thread it left behind ends with the test
    # The same check as one of evalctl's own (no plugin) runs inline, to its own result.
    assert evaluate(check, NoExpected(), _ctx(), None, bounds).status == "pass"
