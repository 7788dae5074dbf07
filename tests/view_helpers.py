"""A run store with the history of issue 39's "done when": 40 runs of one suite where
`shop/steady` always passed until it broke at run 25, `shop/coin-a` and `shop/coin-b` pass
about half the time, and `shop/hostile` answers with markup that must never run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalctl.chat import CompletionResponse, Message, Role, ToolCall
from evalctl.history.record import Provenance, record_run
from evalctl.history.store import open_store
from evalctl.results.models import CaseResult, CaseStatus, RunResult, ToolCallRecord, TurnRecord
from tests import factories as f

RUNS = 40
BROKEN_AT = 25  # 1-based: the run where shop/steady first fails
HOSTILE = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'
# Coin flips fixed in advance (about half pass), so the tests see the same history each time.
COIN_A = "1010011010110100101101001011010010110010"
COIN_B = "0110100110010110011010011001011001101001"


def run_id(i: int) -> str:
    return f"20261101-{i:06d}-scripted-{i:04x}"


def commit(i: int) -> str:
    return f"{i:04d}" + "c0ffee" * 6


def _case(key: str, status: CaseStatus, **kw: Any) -> CaseResult:
    # The same check whatever the outcome: a case's definition (its checks among it) is
    # unchanged from run to run, as in a real suite.
    return f.case(key, status, failed_checks=("answer",) if status == "fail" else (), **kw)


def _hostile(i: int) -> CaseResult:
    c = f.case("shop/hostile", "pass", latency_ms=50.0, input_tokens=30, output_tokens=12)
    call = ToolCall(id="t1", name="lookup", arguments={"q": HOSTILE})
    transcript = [
        TurnRecord(
            turn=1,
            sent=[Message.user(f"find {HOSTILE}")],
            reply=CompletionResponse(content="", tool_calls=[call], stop_reason="tool_use"),
        ),
        TurnRecord(
            turn=2,
            sent=[
                Message(
                    role=Role.TOOL, content=f"found {HOSTILE}", tool_call_id="t1", name="lookup"
                )
            ],
            reply=CompletionResponse(content=f"answer {HOSTILE} run {i}"),
        ),
    ]
    record = ToolCallRecord(
        turn=1, name="lookup", arguments={"q": HOSTILE}, result=f"found {HOSTILE}", duration_ms=1
    )
    return c.model_copy(
        update={"output": f"answer {HOSTILE} run {i}", "transcript": transcript,
                "tool_calls": [record]}
    )  # fmt: skip


def run_result(i: int) -> RunResult:
    """Run i (1-based) of the history."""
    steady = "pass" if i < BROKEN_AT else "fail"
    coin_a = "pass" if COIN_A[i - 1] == "1" else "fail"
    coin_b = "pass" if COIN_B[i - 1] == "1" else "fail"
    cases = [
        _case("shop/steady", steady, latency_ms=100.0 + i, input_tokens=100, output_tokens=20),
        _case("shop/coin-a", coin_a, latency_ms=80.0, input_tokens=60, output_tokens=10),
        _case("shop/coin-b", coin_b, latency_ms=90.0, input_tokens=60, output_tokens=10),
        _hostile(i),
    ]
    cases = [
        c.model_copy(update={"output": c.output or f"{c.id} says {c.status} in run {i}"})
        for c in cases
    ]
    result = f.run(cases, run_id=run_id(i))
    started = f"2026-11-{1 + i // 24:02d}T{i % 24:02d}:00:00+00:00"
    return result.model_copy(update={"started_at": started, "finished_at": started})


def build_store(path: Path | str, runs: int = RUNS) -> Path | str:
    """The store of the history above at `path`: an SQLite file, or a store URL."""
    with open_store(str(path)) as store:
        for i in range(1, runs + 1):
            where = Provenance(git_commit=commit(i), git_branch="main", git_dirty=False)
            record_run(store, run_result(i), where)
    return path
