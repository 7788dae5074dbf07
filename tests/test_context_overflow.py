"""A conversation that outgrows the model's context window: after the first reply it is the
model's own doing (its tool calls and their results) and the case is scored on the turns it
had; on the first request the suite's prompt does not fit, and the case is `error`."""

from __future__ import annotations

import json
from pathlib import Path

from evalctl.errors import ContextOverflowError, ProviderError
from tests.cli_helpers import evalctl

# A provider as a plugin would write one: it calls the suite's tool first, then runs out of
# context on the turn that carries the tool's result. With OVERFLOW_AT = 1 the very first
# request does not fit.
PLUGIN = """
import os

from evalctl.chat import CompletionRequest, CompletionResponse, ToolCall
from evalctl.errors import ContextOverflowError
from evalctl.plugin import ProviderOptions, ProviderTraits, Registry


class Chatty:
    name = "chatty"
    capabilities = frozenset({"tools"})
    model_sha256 = None

    def __init__(self, options: ProviderOptions) -> None:
        self.model = "chatty-1"

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        turn = sum(1 for m in request.messages if m.role == "assistant") + 1
        if turn >= int(os.environ["OVERFLOW_AT"]):
            raise ContextOverflowError("prompt is 5911 tokens but the context window is 4096")
        return CompletionResponse(
            tool_calls=[ToolCall(id="c1", name="lookup", arguments={"q": "x"})],
            stop_reason="tool_use",
            model=self.model,
        )

    def close(self) -> None:
        pass


def register(registry: Registry) -> None:
    registry.add_provider("chatty", Chatty, ProviderTraits("calls a tool, then overflows"))
"""

SUITE = """
[suite]
name = "long"
kind = "assert"
tools = ["lookup"]

[[suite.tool]]
name = "lookup"
description = "Look something up."
parameters = { type = "object", properties = { q = { type = "string" } } }
fixture = "lookup.json"
key = "q"

[[case]]
id = "grows"
input = { prompt = "look up x, then answer" }
[[case.assert]]
type = "tool-called"
name = "lookup"
[[case.assert]]
type = "contains"
value = "found"
"""


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "cases").mkdir(parents=True)
    (root / "cases" / "long.toml").write_text(SUITE)
    (root / "cases" / "lookup.json").write_text(json.dumps({"x": {"found": True}}))
    (root / "chatty_plugin.py").write_text(PLUGIN)
    (root / "evalctl.toml").write_text('plugins = ["chatty_plugin"]\n')
    return root


def _run(root: Path, overflow_at: int) -> tuple[int, dict[str, object]]:
    import os

    os.environ["OVERFLOW_AT"] = str(overflow_at)
    try:
        proc = evalctl(root, "run", "--provider", "chatty", "--out", "out", "--json")
    finally:
        del os.environ["OVERFLOW_AT"]
    results = json.loads((root / "out" / "results.json").read_text())
    return proc.returncode, results["cases"][0]


def test_an_overflow_after_the_first_reply_ends_the_conversation_and_is_scored(
    tmp_path: Path,
) -> None:
    code, case = _run(_project(tmp_path), overflow_at=2)
    assert code == 0  # scored: `run` exits 0 whatever the scores
    assert case["status"] == "fail"
    checks = {c["name"]: c["status"] for c in case["checks"]}  # type: ignore[union-attr]
    assert checks == {"tool-called:lookup": "pass", "contains:found": "fail"}
    turns = case["transcript"]
    assert [t["context_overflow"] for t in turns] == [False, True]  # type: ignore[union-attr]


def test_an_overflow_on_the_first_request_is_an_error(tmp_path: Path) -> None:
    code, case = _run(_project(tmp_path), overflow_at=1)
    assert code == 3
    assert case["status"] == "error"
    assert "context window" in str(case["error"])


def test_the_overflow_is_a_provider_error_that_is_not_retried() -> None:
    from evalctl.errors import TransientProviderError

    assert issubclass(ContextOverflowError, ProviderError)
    assert not issubclass(ContextOverflowError, TransientProviderError)
