"""The run store as a run listener (evalctl.runner.events), and verdicts recorded safely.

Recording never fails a run: results.json is the record of truth, and the store a copy. A
write that fails (a full disk, a locked or read-only file, a server that is down, a
missing driver) is reported through `warn`, which the CLI makes say it once per command
however many runs (a matrix's cells) or verdicts fail after it, and the command goes on as
it would without a store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evalctl.errors import EvalctlError
from evalctl.history.record import Provenance, record_run, record_verdict
from evalctl.history.store import Store, display_url, open_store
from evalctl.results.models import RunResult
from evalctl.runner.events import RunListener

Warn = Callable[[str], None]


def _warn_about(warn: Warn, url: str, error: BaseException) -> None:
    message = (
        error.message if isinstance(error, EvalctlError) else f"{type(error).__name__}: {error}"
    )
    warn(
        f"the run store {display_url(url)} could not be written ({message}); results.json "
        "holds the run, and `evalctl history import` adds it later"
    )


class StoreListener(RunListener):
    """Records each finished run (each matrix cell's too) in the store at `url`."""

    def __init__(self, url: str, where: Provenance, warn: Warn) -> None:
        self.url = url
        self.where = where
        self.warn = warn
        self.recorded: list[str] = []  # the store's keys of the runs recorded

    def run_finished(self, result: RunResult, results_path: Path) -> None:
        store = open_store(self.url)
        try:
            self.recorded.append(
                record_run(store, result, self.where, source=results_path.parent).key
            )
        finally:
            store.close()

    def failed(self, event: str, error: Exception) -> None:
        _warn_about(self.warn, self.url, error)


def record_verdict_safely(
    url: str | None,
    where: Provenance,
    warn: Warn,
    *,
    kind: str,
    subject: str,
    outcome: str,
    exit_code: int,
    body: Mapping[str, Any],
) -> str | None:
    """Record a verdict if a store is on (`url` not None); warn once and go on if the write
    fails. Returns the verdict's key, or None."""
    if url is None:
        return None
    store: Store | None = None
    try:
        store = open_store(url)
        return record_verdict(store, kind, subject, outcome, exit_code, body, where)
    except Exception as exc:
        _warn_about(warn, url, exc)
        return None
    finally:
        if store is not None:
            store.close()
