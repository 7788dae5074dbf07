"""A fake LLM HTTP server on 127.0.0.1 for the unmodified Anthropic, google-genai and openai SDKs.

In tests::

    with FakeLLMServer(latency_ms=100) as server:
        server.enqueue(Step.failing("rate_limit", retry_after=2), Step.reply("hi"))
        env = server.env()            # ANTHROPIC_BASE_URL, EVALCTL_GEMINI_BASE_URL,
                                      # OPENAI_BASE_URL, fake keys
        ...
        assert server.requests[-1].body["messages"][0]["role"] == "user"
        assert server.peak_in_flight == 8     # the most requests it answered at once
        assert server.connections == 1        # TCP connections accepted (keep-alive reuse)

By hand (a documented dev command)::

    python -m evalctl.fakes.llm_server --port 8765 [--latency-ms N] [--script FILE]

The reply to a request is, in order: the next queued step, else the responder's answer (a
callable given by tests), else the turn of the first matching conversation, else the default.
See `evalctl.fakes.script` for the script format and the faults. OpenAI chat completions are
answered as JSON or, when the request says `stream`, as server-sent events. Two switches play
a less capable compatible server: `openai_json_schema = False` refuses `response_format` type
json_schema with a 500, as llama-cpp-python's server does; `openai_stream_usage = False`
leaves usage out of streams.

Embedding requests (OpenAI `/v1/embeddings`, Gemini `:batchEmbedContents` / `:embedContent`)
take their turn like any other: a queued step's fault (rate limit, drop...) applies to them,
and any other step is answered with the fake embedder's vectors of the texts sent
(evalctl.fakes.embedder), so a test can check what the client read against what it sent.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from evalctl.fakes.script import (
    DEFAULT_SLOW_MS,
    Conversation,
    FaultKind,
    ServerScript,
    Step,
    ToolCallSpec,
    load_script,
)
from evalctl.fakes.wire import (
    MALFORMED_BODY,
    MALFORMED_STREAM,
    RecordedRequest,
    error_response,
    is_error_fault,
    not_found,
    openai_models,
    openai_stream,
    rejects_json_schema,
    route,
    success_body,
)

__all__ = [
    "Conversation",
    "FakeLLMServer",
    "FaultKind",
    "RecordedRequest",
    "ServerScript",
    "Step",
    "ToolCallSpec",
    "load_script",
]

Responder = Callable[[RecordedRequest], Step | None]

FAKE_ANTHROPIC_KEY = "sk-ant-fake-0000000000000000"
FAKE_GOOGLE_KEY = "fake-google-key-0000000000"
FAKE_OPENAI_KEY = "sk-fake-openai-000000000000000000"
# What `GET /v1/models` lists: the one model a compatible server serves.
FAKE_OPENAI_MODEL = "fake-served-model"


class FakeLLMServer:
    def __init__(
        self,
        script: ServerScript | None = None,
        *,
        latency_ms: float | None = None,
        port: int = 0,
        responder: Responder | None = None,
        log: Callable[[str], None] | None = None,
    ):
        self._script = script or ServerScript()
        self.latency_ms = self._script.latency_ms if latency_ms is None else latency_ms
        self._queue: deque[Step] = deque(self._script.queue)
        self._conversations = list(self._script.conversations)
        self._responder = responder
        self._log = log
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        # Requests being answered now, and the most there ever were at once: what a client's
        # concurrency really reached (benchmarks/bench_scale.py, tests of `-j`).
        self.in_flight = 0
        self.peak_in_flight = 0
        # TCP connections accepted: fewer than requests where clients keep them alive.
        self.connections = 0
        self._stopping = threading.Event()
        self._httpd = _HTTPServer(("127.0.0.1", port), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None
        # A compatible server's gaps (see the module docstring).
        self.openai_json_schema = True
        self.openai_stream_usage = True

    # -- lifecycle ----------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeLLMServer:
        if self._thread is None:
            # A short poll interval keeps stop() (called after every test) fast.
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="fake-llm-server",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        # Wakes handlers sleeping on latency or a `slow` fault so shutdown is prompt.
        self._stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def env(
        self,
        anthropic_key: str = FAKE_ANTHROPIC_KEY,
        google_key: str = FAKE_GOOGLE_KEY,
        openai_key: str = FAKE_OPENAI_KEY,
    ) -> dict[str, str]:
        """Environment variables that point the SDKs (and evalctl) at this server."""
        return {
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": anthropic_key,
            "EVALCTL_GEMINI_BASE_URL": self.url,
            "GOOGLE_API_KEY": google_key,
            "OPENAI_BASE_URL": f"{self.url}/v1",
            "OPENAI_API_KEY": openai_key,
        }

    # -- scripting ----------------------------------------------------------------------

    def enqueue(self, *steps: Step) -> None:
        with self._lock:
            self._queue.extend(steps)

    def add_conversation(self, match: str, *turns: Step) -> None:
        with self._lock:
            self._conversations.append(Conversation(match=match, turns=list(turns)))

    def set_responder(self, responder: Responder | None) -> None:
        with self._lock:
            self._responder = responder

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def _record(self, **fields: Any) -> RecordedRequest:
        with self._lock:
            rec = RecordedRequest(seq=len(self._requests), **fields)
            self._requests.append(rec)
        if self._log is not None:
            self._log(f"#{rec.seq} {rec.method} {rec.path} ({rec.api}, model={rec.model})")
        return rec

    def _next_step(self, req: RecordedRequest) -> Step:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
            responder = self._responder
            conversations = list(self._conversations)
        if responder is not None:
            step = responder(req)
            if step is not None:
                return step
        first = req.first_user_text()
        for conv in conversations:
            if conv.match in first and conv.turns:
                return conv.turns[min(req.assistant_turns(), len(conv.turns) - 1)]
        return self._script.default

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _sleep(self, ms: float) -> None:
        if ms > 0:
            self._stopping.wait(ms / 1000)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # Sixteen concurrent clients plus retries must not hit the default backlog of 5.
    request_queue_size = 128
    fake: FakeLLMServer

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.fake._lock:
            self.fake.connections += 1
        super().process_request(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    # Keep-alive, like a real API: the SDKs reuse pooled connections.
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, the second waits for the client's
    # delayed ACK (~40 ms a request on Linux), which would swamp any latency measurement.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # requests are recorded (and optionally logged) by FakeLLMServer instead

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0].endswith("/v1/models"):
            self._send(200, openai_models(FAKE_OPENAI_MODEL))
            return
        self._send(404, not_found(self.path))

    def do_POST(self) -> None:
        fake = self.server.fake
        fake._enter()
        try:
            self._post(fake)
        finally:
            fake._leave()

    def _post(self, fake: FakeLLMServer) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        api, gemini_model = route(self.path)
        model = gemini_model or (body.get("model", "") if isinstance(body, dict) else "")
        req = fake._record(
            api=api,
            method="POST",
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            raw=raw,
            body=body,
            model=str(model),
        )
        if api == "unknown":
            self._send(404, not_found(self.path))
            return
        if api == "openai" and not fake.openai_json_schema:
            refusal = rejects_json_schema(req)
            if refusal is not None:
                self._send(500, refusal)
                return
        self._answer(fake, req, fake._next_step(req))

    def _answer(self, fake: FakeLLMServer, req: RecordedRequest, step: Step) -> None:
        fault = step.fault
        if fault == "drop":
            # Read the request, then hang up without a byte of response.
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if fault == "slow":
            fake._sleep(step.latency_ms if step.latency_ms is not None else DEFAULT_SLOW_MS)
        elif step.latency_ms is not None:
            fake._sleep(step.latency_ms)
        elif not is_error_fault(fault):
            fake._sleep(fake.latency_ms)
        streamed = req.api == "openai" and isinstance(req.body, dict) and req.body.get("stream")
        sse = "text/event-stream"
        if fault == "malformed":
            if streamed:
                self._send(200, MALFORMED_STREAM, content_type=sse)
            else:
                self._send(200, MALFORMED_BODY)
        elif fault is not None and is_error_fault(fault):
            status, headers, payload = error_response(fault, step, req)
            self._send(status, payload, headers)
        elif streamed:
            usage = fake.openai_stream_usage
            self._send(200, openai_stream(step, req, req.seq, usage=usage), content_type=sse)
        else:
            self._send(200, json.dumps(success_body(step, req, req.seq)).encode())

    def _send(
        self,
        status: int,
        payload: bytes,
        headers: Mapping[str, str] = {},
        content_type: str = "application/json",
    ) -> None:
        # A stream goes out whole, with a content-length: keep-alive stays simple, and the
        # client still parses it event by event.
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(payload)))
            self.send_header("request-id", f"req_fake_{id(self):x}")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)
        except OSError:
            # The client gave up (its timeout fired during a slow reply): nothing to do.
            self.close_connection = True


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evalctl.fakes.llm_server",
        description="Fake Anthropic + Gemini + OpenAI API server on 127.0.0.1 for tests and demos.",
    )
    parser.add_argument("--port", type=int, default=8765, help="0 picks a free port")
    parser.add_argument("--latency-ms", type=float, default=None, help="delay for each reply")
    parser.add_argument("--script", type=Path, default=None, help="TOML or JSON script file")
    parser.add_argument("--quiet", action="store_true", help="do not log requests")
    args = parser.parse_args(argv)
    script = load_script(args.script) if args.script else None

    def log(line: str) -> None:
        print(line, flush=True)

    server = FakeLLMServer(
        script, latency_ms=args.latency_ms, port=args.port, log=None if args.quiet else log
    )
    print(f"fake LLM server listening on {server.url}", flush=True)
    print("point the SDKs and evalctl at it with:", flush=True)
    for name, value in server.env().items():
        print(f"  export {name}={value}", flush=True)
    print("Ctrl-C stops it.", flush=True)
    server.start()
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
