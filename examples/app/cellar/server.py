"""The assistant over HTTP: `POST /answer` with `{"question": ...}` answers `{"text": ...,
"tool_calls": [...]}`; `GET /health` answers 200. Run from examples/app:
`python -m cellar.server PORT` (0: any free port; the port is printed)."""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cellar.assistant import respond


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a client may reuse its connection

    def do_GET(self) -> None:
        if self.path == "/health":
            return self._send(200, {"ok": True})
        return self._send(404, {"error": "not found"})

    def do_POST(self) -> None:
        if self.path != "/answer":
            return self._send(404, {"error": "not found"})
        length = int(self.headers.get("Content-Length") or 0)
        question = json.loads(self.rfile.read(length))["question"]
        trace: list[dict[str, object]] = []
        text = respond(question, trace)
        self._send(200, {"text": text, "tool_calls": trace})

    def _send(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: one line per request would drown the output


def main() -> None:
    server = ThreadingHTTPServer(
        ("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0), Handler
    )
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
