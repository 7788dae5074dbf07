"""Writing a suite next to a tiny application for the target and spy tests; every test gets
module names of its own, since a module imported once stays in sys.modules."""

from __future__ import annotations

import itertools
import textwrap
from pathlib import Path

from evalctl.config import Settings
from evalctl.results.models import RunResult
from evalctl.retry import RetryPolicy
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run

NO_SLEEP = RetryPolicy(max_attempts=3, sleep=lambda _s: None)
_serial = itertools.count()


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
