"""The `http` target: your application behind an HTTP endpoint, one request per turn.

One keep-alive connection per worker thread (`-j` runs cases on several), reused across a
run's requests. A 429, a 5xx, a timeout or a lost connection is a `TransientProviderError`,
retried by the runner under the one retry policy (evalctl.retry) like any provider's; other
statuses are permanent. Either way a case that cannot get an answer ends in `error`, never as
a failed check. A request has a total deadline (the target's `timeout_s`, else the case's time
left), headers and body included, and a body past `max_reply_bytes` is refused unread.
`${VAR}` in the URL and header values comes from the environment when the target is created;
the header values among them are added to what evalctl redacts, by value, whatever the
variable's name.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from evalctl import secrets
from evalctl.chat import CompletionRequest, CompletionResponse, Usage
from evalctl.errors import BadInputError, ProviderError, TransientProviderError
from evalctl.providers.targets.config import HttpTarget
from evalctl.providers.targets.reply import (
    SAMPLING_KEYS,
    TargetTraits,
    read_json,
    refuse_side_request,
    render_template,
    target_input,
    template_names,
    to_response,
    too_large,
    value_at,
)

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# 429 (rate limited), 408 (request timeout) and the 5xx family are worth another try.
_RETRIED = {408, 429}
_CHUNK = 65536


def expand(
    text: str, env: Mapping[str, str], field: str, source: str | None
) -> tuple[str, list[str]]:
    """`text` with each `${VAR}` from `env`, and the variables used; an unset one is bad input."""
    used: list[str] = []

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise BadInputError(f"environment variable {name} is not set", file=source, field=field)
        used.append(name)
        return env[name]

    return _VAR.sub(value, text), used


class _TooLarge(Exception):
    pass


def _read_body(response: http.client.HTTPResponse, limit: int) -> bytes:
    """The body, read as it comes and refused past `limit` bytes (a Content-Length over it is
    refused before reading any)."""
    length = response.getheader("Content-Length") or ""
    if length.strip().isdigit() and int(length) > limit:
        raise _TooLarge
    data = bytearray()
    while chunk := response.read(_CHUNK):
        data += chunk
        if len(data) > limit:
            raise _TooLarge
    return bytes(data)


class _Watchdog:
    """Shuts the connection's socket down if the block is still running after `seconds`: a
    read blocked on it then fails at once, and `fired` says why."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float):
        self._conn = conn
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self.fired = False

    def _fire(self) -> None:
        self.fired = True
        sock = self._conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def __enter__(self) -> _Watchdog:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()


def _retry_after(header: str | None) -> float | None:
    try:
        return max(0.0, float(header)) if header else None
    except ValueError:
        return None  # an HTTP date: the policy's own backoff will do


class HttpTargetProvider(TargetTraits):
    name = "http"
    summary = "your application behind an HTTP endpoint (docs/targets.md)"
    concurrent = True

    def __init__(
        self,
        target: HttpTarget,
        env: Mapping[str, str] | None = None,
        *,
        source: str = "",
        field: str = "suite.target",
    ):
        env = os.environ if env is None else env
        where = source or None
        self._target = target
        # The URL's variables are redacted as any variable is (by a secret-looking name); a
        # header's by value, whatever its name: headers are where credentials go.
        url, _ = expand(target.url, env, f"{field}.url", where)
        headers: dict[str, str] = {}
        used: list[str] = []
        for key, raw in target.headers.items():
            headers[key], more = expand(raw, env, f"{field}.headers.{key}", where)
            used += more
        self._secret_values = tuple(env[name] for name in used)
        secrets.remember_values(self._secret_values)
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadInputError(
                f"not an http(s) URL: {self._redact(url)!r}", file=where, field=f"{field}.url"
            )
        self._https = parts.scheme == "https"
        self._host, self._port = parts.hostname, parts.port
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        self._headers.update(headers)
        self._local = threading.local()
        self._all: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _redact(self, text: str) -> str:
        return secrets.redact(text, extra=self._secret_values)

    @property
    def model(self) -> str:
        return self._redact(f"{self._target.method} {self._target.url}")

    @property
    def sampling_params(self) -> frozenset[str]:
        """The sampling settings the application receives: all of them in the whole input
        document (no `body`), those its `body` template names, none for a GET (no body)."""
        if self._target.method == "GET":
            return frozenset()
        if self._target.body is None:
            return frozenset(SAMPLING_KEYS)
        return frozenset(SAMPLING_KEYS) & template_names(self._target.body)

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            factory = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
            conn = factory(self._host, self._port, timeout=timeout)
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        refuse_side_request(request, f"http target {self.model}")
        limit = min(timeout, self._target.timeout_s or timeout)
        document = target_input(request)
        body = (
            document if self._target.body is None else render_template(self._target.body, document)
        )
        payload = None if self._target.method == "GET" else json.dumps(body).encode()
        what = f"http target {self.model}"
        started = time.monotonic()
        conn = self._connection(limit)
        # The whole exchange, not each read, is bounded: a server trickling its headers or
        # body a byte at a time never trips a read timeout, so the watchdog shuts the socket
        # down at the deadline.
        watchdog = _Watchdog(conn, limit)
        try:
            with watchdog:
                conn.request(self._target.method, self._path, body=payload, headers=self._headers)
                response = conn.getresponse()
                data = _read_body(response, self._target.max_reply_bytes)
            if watchdog.fired:  # the shut-down socket may have read as a short, clean end
                raise TimeoutError
        except _TooLarge:
            self._drop()
            raise too_large(what, self._target.max_reply_bytes) from None
        except (OSError, http.client.HTTPException) as exc:
            self._drop()
            if watchdog.fired or isinstance(exc, TimeoutError):
                raise TransientProviderError(
                    f"{what} did not answer within {limit:.1f} s"
                ) from None
            raise TransientProviderError(
                self._redact(f"{what}: {type(exc).__name__}: {exc}")
            ) from None
        elapsed_ms = (time.monotonic() - started) * 1000
        status = response.status
        if response.will_close:
            self._drop()
        if status in _RETRIED or status >= 500:
            raise TransientProviderError(
                f"{what} answered HTTP {status}",
                retry_after=_retry_after(response.getheader("Retry-After")),
            )
        if status >= 300:
            snippet = self._redact(data[:200].decode(errors="replace"))
            raise ProviderError(f"{what} answered HTTP {status}: {snippet}")
        return self._reply(data, what, elapsed_ms)

    def _reply(self, data: bytes, what: str, elapsed_ms: float) -> CompletionResponse:
        target = self._target
        is_json, parsed = read_json(data, what)
        if not is_json:
            if target.answer.strip() in ("", "$"):  # the whole body is the answer
                return to_response(
                    data.decode(errors="replace"),
                    what=what,
                    model=self.model,
                    elapsed_ms=elapsed_ms,
                )
            raise ProviderError(f"{what} answered with a body that is not JSON")
        found, answer = value_at(parsed, target.answer)
        if not found or not isinstance(answer, str):
            raise ProviderError(f"{what}: no text at answer path {target.answer!r} in its reply")
        usage: dict[str, int] = {}
        for key, path in target.usage.items():
            found, count = value_at(parsed, path)
            if found and isinstance(count, int):
                usage[key] = count
        reply: dict[str, Any] = {"text": answer, "usage": Usage(**usage).model_dump()}
        if target.tool_calls:
            found, calls = value_at(parsed, target.tool_calls)
            reply["tool_calls"] = calls if found and calls is not None else []
        return to_response(reply, what=what, model=self.model, elapsed_ms=elapsed_ms)

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
