"""The viewer's way into the store: opened read-only, every query under a time limit.

SQLite is opened with `mode=ro` (the file cannot be written through this connection, nor
created: a missing store is an error, not an empty new file), and a progress handler
interrupts any statement still running at the request's deadline. PostgreSQL goes through
the store's own opening, then the session is made read-only (`default_transaction_read_only`)
with a `statement_timeout`.
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from evalctl.errors import BadInputError
from evalctl.history.store import (
    SCHEMA_VERSION,
    SQLITE,
    Store,
    StoreError,
    display_url,
    is_postgres,
    open_store,
)

# SQLite calls the handler every this many virtual machine instructions (some microseconds).
_PROGRESS_EVERY = 1_000


class QueryTimeout(StoreError):
    """A page's queries ran past the viewer's time limit."""


def sqlite_path(url: str) -> Path:
    """The file an SQLite store URL names (a path, or `sqlite:///PATH`)."""
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///") :])
    return Path(url).expanduser()


def open_read_only(url: str, time_limit_s: float) -> Store:
    """The store at `url`, readable only, each statement held to `time_limit_s` from now."""
    if is_postgres(url):
        return _postgres(url, time_limit_s)
    path = sqlite_path(url)
    if not path.is_file():
        raise BadInputError(
            "no run store here: `evalctl run` records one, `evalctl history import DIR` "
            "adds results folders to it",
            file=str(path),
            field="--store",
        )
    try:
        conn = sqlite3.connect(
            f"{path.resolve().as_uri()}?mode=ro",
            uri=True,
            timeout=time_limit_s,
            isolation_level=None,
            check_same_thread=False,
        )
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open the run store {path} to read: {exc}") from None
    store = Store(conn, SQLITE, str(path))
    _check_version(store)
    deadline = time.monotonic() + time_limit_s
    # A non-zero return interrupts the statement (sqlite3 raises OperationalError).
    conn.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_EVERY)
    return store


def _postgres(url: str, time_limit_s: float) -> Store:
    store = open_store(url)
    try:
        cur = store.conn.cursor()
        cur.execute("SET default_transaction_read_only = on")
        cur.execute(f"SET statement_timeout = {max(1, int(time_limit_s * 1000))}")
        cur.close()
        store.conn.commit()
    except Exception as exc:
        store.close()
        raise StoreError(f"run store {display_url(url)}: {exc}") from None
    return store


def _check_version(store: Store) -> None:
    try:
        version = store.schema_version()
    except StoreError:
        version = 0
    if version != SCHEMA_VERSION:
        store.close()
        raise StoreError(
            f"the run store {store.url} has schema version {version}, this viewer reads "
            f"{SCHEMA_VERSION}",
            hint="any `evalctl history` command upgrades it (the viewer only reads)",
        )


def timed_out(exc: BaseException) -> bool:
    """Whether a store error is the time limit's interruption."""
    text = str(exc).lower()
    return "interrupted" in text or "statement timeout" in text or "canceling statement" in text
