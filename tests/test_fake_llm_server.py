"""The fake LLM server itself, over plain HTTP (the SDK-level behaviour is tested per provider)."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalctl.fakes.llm_server import FakeLLMServer, RecordedRequest, Step, load_script

ANTHROPIC_PATH = "/v1/messages"
GEMINI_PATH = "/v1beta/models/gemini-x:generateContent"


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def post(port: int, path: str, body: dict[str, Any], timeout: float = 10) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def anthropic_body(text: str, assistant_turns: int = 0) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": text}]
    for _ in range(assistant_turns):
        messages += [{"role": "assistant", "content": "..."}, {"role": "user", "content": "go"}]
    return {"model": "claude-x", "max_tokens": 10, "messages": messages}


def gemini_body(text: str) -> dict[str, Any]:
    return {"contents": [{"role": "user", "parts": [{"text": text}]}]}


def test_speaks_both_wire_formats(server: FakeLLMServer) -> None:
    server.enqueue(Step.tool("f", {"a": 1}), Step.tool("g", {"b": 2}))
    status, raw = post(server.port, ANTHROPIC_PATH, anthropic_body("hi"))
    message = json.loads(raw)
    assert status == 200
    assert (message["type"], message["role"], message["stop_reason"]) == (
        "message",
        "assistant",
        "tool_use",
    )
    assert message["content"][0]["type"] == "tool_use"
    assert message["content"][0]["input"] == {"a": 1}
    assert message["usage"]["input_tokens"] > 0

    status, raw = post(server.port, GEMINI_PATH, gemini_body("hi"))
    reply = json.loads(raw)
    assert status == 200
    part = reply["candidates"][0]["content"]["parts"][0]
    assert part["functionCall"] == {"name": "g", "args": {"b": 2}}
    assert reply["candidates"][0]["finishReason"] == "STOP"
    assert reply["usageMetadata"]["totalTokenCount"] > 0

    first, second = server.requests
    assert (first.api, first.model, second.api, second.model) == (
        "anthropic",
        "claude-x",
        "gemini",
        "gemini-x",
    )
    assert second.body == gemini_body("hi")
    assert second.headers["content-type"] == "application/json"


OPENAI_PATH = "/v1/chat/completions"


def openai_body(text: str, **extra: Any) -> dict[str, Any]:
    return {"model": "gpt-x", "messages": [{"role": "user", "content": text}], **extra}


def test_speaks_openai_chat_completions_plain_and_streamed(server: FakeLLMServer) -> None:
    server.enqueue(Step.tool("f", {"a": 1}), Step.reply("two words", output_tokens=2))
    status, raw = post(server.port, OPENAI_PATH, openai_body("hi"))
    completion = json.loads(raw)
    assert status == 200 and completion["object"] == "chat.completion"
    choice = completion["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]
    assert (call["type"], call["function"]["name"]) == ("function", "f")
    assert json.loads(call["function"]["arguments"]) == {"a": 1}
    assert completion["usage"]["prompt_tokens"] > 0

    body = openai_body("hi", stream=True, stream_options={"include_usage": True})
    status, raw = post(server.port, OPENAI_PATH, body)
    events = [line.removeprefix("data: ") for line in raw.decode().split("\n\n") if line]
    assert status == 200 and events[-1] == "[DONE]"
    chunks = [json.loads(e) for e in events[:-1]]
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == "two words"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 2
    assert server.requests[-1].api == "openai"
    assert server.requests[-1].first_user_text() == "hi"


def test_unknown_route_is_404(server: FakeLLMServer) -> None:
    status, _ = post(server.port, "/v2/nothing", {})
    assert status == 404


def test_queue_then_responder_then_conversation_then_default(server: FakeLLMServer) -> None:
    server.add_conversation("case-7", Step.reply("turn one"), Step.reply("turn two"))
    server.enqueue(Step.reply("queued"))

    def text(body: dict[str, Any]) -> str:
        status, raw = post(server.port, ANTHROPIC_PATH, body)
        assert status == 200
        return str(json.loads(raw)["content"][0]["text"])

    assert text(anthropic_body("case-7")) == "queued"
    assert text(anthropic_body("case-7")) == "turn one"
    assert text(anthropic_body("case-7", assistant_turns=1)) == "turn two"
    assert text(anthropic_body("case-7", assistant_turns=5)) == "turn two"  # last turn repeats
    assert text(anthropic_body("anything else")) == "ok"

    def responder(req: RecordedRequest) -> Step | None:
        return Step.reply("from responder") if "special" in req.first_user_text() else None

    server.set_responder(responder)
    assert text(anthropic_body("special")) == "from responder"
    assert text(anthropic_body("case-7")) == "turn one"


def test_latency_is_applied(server: FakeLLMServer) -> None:
    server.latency_ms = 150
    started = time.monotonic()
    post(server.port, ANTHROPIC_PATH, anthropic_body("hi"))
    assert time.monotonic() - started >= 0.15


@pytest.mark.parametrize(
    ("fault", "anthropic_status", "gemini_status", "openai_status"),
    [
        ("rate_limit", 429, 429, 429),
        ("server_error", 500, 500, 500),
        ("overloaded", 529, 503, 503),
        ("bad_request", 400, 400, 400),
    ],
)
def test_error_faults(
    server: FakeLLMServer, fault: str, anthropic_status: int, gemini_status: int, openai_status: int
) -> None:
    server.enqueue(*[Step.failing(fault, retry_after=4)] * 3)  # type: ignore[arg-type]
    status, raw = post(server.port, OPENAI_PATH, openai_body("hi"))
    assert status == openai_status
    assert json.loads(raw)["error"]["message"]
    status, raw = post(server.port, ANTHROPIC_PATH, anthropic_body("hi"))
    assert status == anthropic_status
    assert json.loads(raw)["type"] == "error"
    status, raw = post(server.port, GEMINI_PATH, gemini_body("hi"))
    assert status == gemini_status
    error = json.loads(raw)["error"]
    assert error["code"] == gemini_status
    if fault == "rate_limit":
        assert error["details"][0]["retryDelay"] == "4s"


def test_rate_limit_sends_retry_after_header(server: FakeLLMServer) -> None:
    server.enqueue(Step.failing("rate_limit", retry_after=7))
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.request("POST", ANTHROPIC_PATH, json.dumps(anthropic_body("hi")))
    response = conn.getresponse()
    assert (response.status, response.getheader("retry-after")) == (429, "7")
    conn.close()


def test_drop_closes_without_a_response(server: FakeLLMServer) -> None:
    server.enqueue(Step.failing("drop"))
    with pytest.raises((http.client.RemoteDisconnected, ConnectionError)):
        post(server.port, ANTHROPIC_PATH, anthropic_body("hi"))
    assert len(server.requests) == 1  # the request was read and recorded first


def test_malformed_body(server: FakeLLMServer) -> None:
    server.enqueue(Step.failing("malformed"))
    status, raw = post(server.port, GEMINI_PATH, gemini_body("hi"))
    assert status == 200
    with pytest.raises(ValueError):
        json.loads(raw)


def test_stop_does_not_wait_for_a_slow_reply() -> None:
    server = FakeLLMServer().start()
    server.enqueue(Step.failing("slow", latency_ms=600_000))
    with pytest.raises(TimeoutError):
        post(server.port, ANTHROPIC_PATH, anthropic_body("hi"), timeout=0.3)
    started = time.monotonic()
    server.stop()
    # Far below the reply's 600 s, far above what a busy machine needs to stop a server.
    assert time.monotonic() - started < 60


def test_script_file(tmp_path: Path) -> None:
    path = tmp_path / "script.toml"
    path.write_text(
        """
latency_ms = 5
[[queue]]
fault = "overloaded"
[[conversations]]
match = "Paris"
[[conversations.turns]]
tool_calls = [{ name = "get_weather", arguments = { city = "Paris" } }]
[default]
text = "fallback"
"""
    )
    script = load_script(path)
    with FakeLLMServer(script) as server:
        assert post(server.port, ANTHROPIC_PATH, anthropic_body("Paris"))[0] == 529
        reply = json.loads(post(server.port, ANTHROPIC_PATH, anthropic_body("Paris"))[1])
        assert reply["content"][0]["name"] == "get_weather"
        reply = json.loads(post(server.port, ANTHROPIC_PATH, anthropic_body("Rome"))[1])
        assert reply["content"][0]["text"] == "fallback"


def test_runnable_as_a_dev_command(repo: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalctl.fakes.llm_server", "--port", "0", "--latency-ms", "1"],
        cwd=repo,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(9)]
        banner = "".join(lines)
        assert "export ANTHROPIC_BASE_URL=http://127.0.0.1:" in banner
        assert "export EVALCTL_GEMINI_BASE_URL=" in banner
        assert "export OPENAI_BASE_URL=http://127.0.0.1:" in banner
        url = lines[0].split()[-1]
        port = int(url.rsplit(":", 1)[1])
        status, _ = post(port, ANTHROPIC_PATH, anthropic_body("hi"))
        assert status == 200
        assert "POST /v1/messages" in proc.stdout.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
