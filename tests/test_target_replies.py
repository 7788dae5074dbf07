"""A reply never loses the run: whatever a python, command or http target answers (JSON nested
past any parser, a body larger than the cap, a trickle slower than any read timeout, absurd
numbers, text no file can hold), that case ends in `error` with a message, and every other
case of the run is scored and written. Real subprocesses and a real loopback server; every
bound here waits for an outcome, none times anything."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from evalctl.config import Settings
from evalctl.results.io import read_run
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from tests.target_helpers import NO_SLEEP, run_suite, serving, unique, write

DEEP = 100_000  # past the JSON parser's recursion limit


def _cases(ids: list[str]) -> str:
    return "".join(
        f"""
        [[case]]
        id = "{case}"
        input = {{ prompt = "{case}" }}
        [[case.assert]]
        type = "contains"
        value = "ok"
        """
        for case in ids
    )


def _suite(tmp_path: Path, target: str, ids: list[str], extra: str = "") -> Path:
    return write(
        tmp_path / "suite.toml",
        f"""
        [suite]
        name = "replies"
        kind = "assert"
        max_turns = 1
        {extra}
        target = {target}
        """
        + _cases(ids),
    )


def _statuses(out: Path) -> dict[str, tuple[str, str]]:
    """What the run wrote: each case's status and error, read back from results.json."""
    result = read_run(out / "results.json")
    return {c.id: (c.status, c.error or "") for c in result.cases}


# -- command target -----------------------------------------------------------------------

COMMAND_APP = f"""
import json, sys
prompt = json.load(sys.stdin)["prompt"]
if prompt == "deep":
    sys.stdout.write("[" * {DEEP} + "]" * {DEEP})
elif prompt == "deeptext":
    print(json.dumps({{"text": "ok " + "[" * {DEEP} + "]" * {DEEP}}}))
elif prompt == "huge":
    chunk = "x" * 1_000_000
    for _ in range(80):
        sys.stdout.write(chunk)
elif prompt == "nan":
    sys.stdout.write('{{"text": "ok", "tool_calls": [{{"name": "t", "result": NaN, '
                     '"duration_ms": Infinity}}]}}')
elif prompt == "tokens":
    sys.stdout.write('{{"text": "ok", "usage": {{"output_tokens": 1e308}}}}')
elif prompt == "bigint":
    sys.stdout.write('{{"text": "ok", "usage": {{"input_tokens": ' + "9" * 5000 + '}}}}')
elif prompt == "surrogate":
    sys.stdout.write('{{"text": "ok \\\\ud800", "tool_calls": [{{"name": "t", '
                     '"result": {{"k": [1e308, -1e308, NaN]}}}}]}}')
else:
    print(json.dumps({{"text": "ok " + prompt}}))
"""


def test_command_target_replies_that_would_lose_the_run(tmp_path: Path) -> None:
    write(tmp_path / "app.py", COMMAND_APP)
    target = f'{{ type = "command", argv = ["{sys.executable}", "app.py"] }}'
    ids = ["deep", "deeptext", "huge", "nan", "tokens", "bigint", "surrogate", "fine"]
    run_suite(_suite(tmp_path, target, ids), tmp_path / "out")
    got = _statuses(tmp_path / "out")
    assert got["fine"] == ("pass", "")
    assert got["deep"][0] == "error" and "nested too deeply" in got["deep"][1]
    assert got["huge"][0] == "error" and "more than 4000000 bytes" in got["huge"][1]
    for case in ("nan", "tokens"):
        assert got[case][0] == "error" and "unusable reply" in got[case][1], got[case]
    assert got["bigint"][0] == "error" and "cannot be read" in got["bigint"][1]
    # Answered: the JSON in the answer is too deep to read, the text is still the answer.
    assert got["deeptext"][0] == "pass", got["deeptext"]
    # A lone surrogate and non-finite numbers are recorded as something a file can hold.
    assert got["surrogate"][0] == "pass", got["surrogate"]
    surrogate = next(
        c for c in read_run(tmp_path / "out" / "results.json").cases if c.id == "surrogate"
    )
    assert surrogate.output == "ok ?"  # the lone surrogate replaced: the file is UTF-8
    assert surrogate.tool_calls[0].data == {"value": {"k": [1e308, -1e308, "nan"]}}


def test_the_reply_cap_is_the_targets_to_raise(tmp_path: Path) -> None:
    write(tmp_path / "app.py", COMMAND_APP)
    target = f'{{ type = "command", argv = ["{sys.executable}", "app.py"], max_reply_bytes = 100 }}'
    run_suite(_suite(tmp_path, target, ["fine", "x" * 120]), tmp_path / "out")
    got = _statuses(tmp_path / "out")
    assert got["fine"][0] == "pass"
    assert "more than 100 bytes" in got["x" * 120][1]


# -- python target ------------------------------------------------------------------------


def test_python_target_replies_that_would_lose_the_run(tmp_path: Path) -> None:
    app = unique("replyapp")
    write(
        tmp_path / f"{app}.py",
        """
        import os

        def answer(doc):
            prompt = doc["prompt"]
            if prompt == "chdir":
                os.chdir("/")
                os.environ["EVALCTL_PROBE_SET"] = "1"
                return "ok moved"
            if prompt == "tokens":
                return {"text": "ok", "usage": {"output_tokens": 1e308}}
            if prompt == "cycle":
                looped = []
                looped.append(looped)
                return {"text": "ok", "tool_calls": [{"name": "t", "result": looped}]}
            if prompt == "huge":
                return "ok" + "x" * 5_000_000
            if prompt == "exit":
                os._exit(0)
            if prompt == "badstr":
                class Bad(Exception):
                    def __str__(self):
                        raise ValueError("no")
                raise Bad()
            return "ok " + prompt
        """,
    )
    target = f'{{ type = "python", function = "{app}:answer" }}'
    ids = ["chdir", "tokens", "cycle", "huge", "exit", "badstr", "fine"]
    run_suite(_suite(tmp_path, target, ids), tmp_path / "out")
    got = _statuses(tmp_path / "out")
    assert got["chdir"] == ("pass", "") and got["fine"] == ("pass", "")
    assert Path.cwd() != Path("/")
    import os

    assert "EVALCTL_PROBE_SET" not in os.environ
    assert got["tokens"][0] == "error" and "usage.output_tokens" in got["tokens"][1]
    # A cycle in a reported call's result is recorded, cut where it loops.
    assert got["cycle"] == ("pass", "")
    cycle = next(c for c in read_run(tmp_path / "out" / "results.json").cases if c.id == "cycle")
    assert cycle.tool_calls[0].data == {"value": ["<cycle: list>"]}
    assert got["huge"][0] == "error" and "more than 4000000 bytes" in got["huge"][1]
    assert got["exit"][0] == "error" and "os._exit(0)" in got["exit"][1]
    assert got["badstr"][0] == "error" and "Bad" in got["badstr"][1]


# -- http target --------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.stop = threading.Event()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["prompt"]
        if prompt == "trickle":
            # Headers at once, then one byte every 0.2 s for minutes: no read ever times out.
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            for _ in range(1000):
                if self.server.stop.is_set():
                    return
                try:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.2)
            return
        if prompt == "slowheaders":
            try:
                for char in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 1000:
                    if self.server.stop.is_set():
                        return
                    self.wfile.write(bytes([char]))
                    self.wfile.flush()
                    time.sleep(0.2)
            except OSError:
                return
            return
        if prompt == "huge":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"x" * 1_000_000
            try:
                for _ in range(80):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                self.wfile.write(b"0\r\n\r\n")
            except OSError:
                pass
            self.close_connection = True
            return
        if prompt == "deep":
            data = b"[" * DEEP + b"]" * DEEP
        else:
            data = json.dumps({"text": f"ok {prompt}"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[_Server]:
    with serving(_Server()) as app:
        yield app
        app.stop.set()  # ends a trickle still writing, before the shutdown waits for it


def test_http_target_replies_that_would_lose_the_run(tmp_path: Path, server: _Server) -> None:
    # A generous deadline: the trickles would run for minutes without one.
    target = '{ type = "http", url = "${APP_URL}/answer", timeout_s = 3 }'
    ids = ["trickle", "slowheaders", "huge", "deep", "fine"]
    run_suite(_suite(tmp_path, target, ids), tmp_path / "out", env={"APP_URL": server.url})
    got = _statuses(tmp_path / "out")
    assert got["fine"] == ("pass", "")
    for case in ("trickle", "slowheaders"):
        assert got[case][0] == "error" and "did not answer within 3.0 s" in got[case][1]
    assert got["huge"][0] == "error" and "more than 4000000 bytes" in got["huge"][1]
    assert got["deep"][0] == "error" and "nested too deeply" in got["deep"][1]
    run_dir = sum(p.stat().st_size for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert run_dir < 10_000_000


def test_a_content_length_over_the_cap_is_refused_unread(tmp_path: Path) -> None:
    # A server that promises 80 MB and sends nothing more: refused on the header alone.
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        for _ in range(3):
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 80000000\r\n\r\n")
            time.sleep(0.5)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    try:
        target = '{ type = "http", url = "${APP_URL}/answer", timeout_s = 60 }'
        run_suite(
            _suite(tmp_path, target, ["promise"]),
            tmp_path / "out",
            env={"APP_URL": f"http://127.0.0.1:{port}"},
        )
    finally:
        listener.close()
    status, error = _statuses(tmp_path / "out")["promise"]
    assert status == "error" and "more than 4000000 bytes" in error


# -- odd ids ------------------------------------------------------------------------------


def test_a_300_character_case_id_with_a_daemon_crash_keeps_the_run(tmp_path: Path) -> None:
    long_id = "c" * 300
    suite = write(
        tmp_path / "suite.toml",
        """
        [suite]
        name = "crashy"
        kind = "assert"
        """
        + _cases([long_id, "fine"]),
    )
    script = tmp_path / "script.toml"
    script.write_text(
        f'[[cases."crashy/{long_id}"]]\nerror = "crash"\n[[cases."crashy/fine"]]\ncontent = "ok"\n'
    )
    request = RunRequest(
        provider="scripted",
        script=script,
        paths=[suite],
        out_dir=tmp_path / "out",
        show_progress=False,
        crash_retries=1,
    )
    execute_run(request, Settings(), {}, retry=NO_SLEEP)
    got = _statuses(tmp_path / "out")
    assert got["fine"] == ("pass", "")
    status, error = got[long_id]
    assert status == "error" and "repro saved to" in error
    (repro,) = (tmp_path / "out" / "repros").iterdir()
    assert len(repro.name) <= 125 and repro.name.startswith("crashy__ccc")
    assert json.loads(repro.read_text())["tag"] == f"crashy/{long_id}"
