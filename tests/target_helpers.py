"""Writing a suite next to a tiny application for the target and spy tests; every test gets
module names of its own, since a module imported once stays in sys.modules. And serving a
loopback HTTP application for the http target's tests."""

from __future__ import annotations

import itertools
import socketserver
import textwrap
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from evalctl.config import Settings
from evalctl.results.models import RunResult
from evalctl.retry import RetryPolicy
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run

NO_SLEEP = RetryPolicy(max_attempts=3, sleep=lambda _s: None)
_serial = itertools.count()
Server = TypeVar("Server", bound=socketserver.BaseServer)


@contextmanager
def serving(server: Server) -> Iterator[Server]:
    """`server` answering on its own daemon thread for the block, then shut down and closed."""
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def unique(prefix: str) -> str:
    return f"{prefix}_{next(_serial)}_{id(_serial)}"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def run_suite(
    suite: Path,
    out: Path,
    *,
    provider: str | None = None,
    env: dict[str, str] | None = None,
    retry: RetryPolicy = NO_SLEEP,
    concurrency: int = 1,
) -> RunResult:
    request = RunRequest(
        provider=provider, paths=[suite], out_dir=out, show_progress=False,
        concurrency=concurrency,
    )  # fmt: skip
    return execute_run(request, Settings(), env or {}, retry=retry).result
