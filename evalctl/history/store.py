"""Opening a run store: an SQLite file or a PostgreSQL database, through one code path.

Both go through Python's DB-API (sqlite3, psycopg 3): the SQL is written once, with `?`
placeholders and types that both accept, and a small `Dialect` says what differs (the
placeholder, the blob and float types, how a write transaction starts). `ON CONFLICT DO
NOTHING` is the one upsert both speak, and it is what makes every insert idempotent: a run
recorded twice, or by two writers at once, is stored once.

Several writers at once: SQLite runs in WAL mode with a busy timeout, and each write is one
`BEGIN IMMEDIATE` transaction (a writer waits for the lock instead of failing on an upgrade);
PostgreSQL serialises schema upgrades on an advisory lock and commits each run in one
transaction.

The schema has a version (table `evalctl_schema`); opening a store applies the migrations
it lacks, in order, and refuses a store written by a newer evalctl.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from evalctl.errors import BadInputError, EvalctlError, ExitCode, InfraError

# Turning the store off: `--no-store`, `EVALCTL_STORE=off`, `[history] store = "off"`.
OFF: Final = frozenset({"off", "none", "false", "no", "0", ""})
DEFAULT_FILE: Final = "history.sqlite"
# How long an SQLite writer waits for another's lock before giving up (seconds).
BUSY_TIMEOUT_S: Final = 60.0
# Any number: the key of the advisory lock PostgreSQL writers take around schema upgrades.
_PG_LOCK: Final = 0x65766C63  # "evlc"
POSTGRES_EXTRA: Final = "postgres"


class StoreError(InfraError):
    """The store could not be opened, read or written (exit 3)."""


@dataclass(frozen=True)
class Dialect:
    name: str
    placeholder: str
    blob: str
    real: str
    bigint: str

    def sql(self, text: str) -> str:
        return text if self.placeholder == "?" else text.replace("?", self.placeholder)

    def ddl(self, text: str) -> str:
        return text.format(blob=self.blob, real=self.real, bigint=self.bigint)


SQLITE: Final = Dialect("sqlite", "?", "BLOB", "REAL", "INTEGER")
POSTGRES: Final = Dialect("postgresql", "%s", "BYTEA", "DOUBLE PRECISION", "BIGINT")


# A case history's totals from its runs in `cases` (one row of `case_totals` per history key;
# a history key determines its suite, case id, provider, model and prompt variant).
TOTALS_SELECT: Final = (
    "SELECT history_key, MIN(suite), MIN(case_id), MIN(provider), MIN(model), "
    "MIN(prompt_variant), COUNT(*), "
    "SUM(CASE WHEN status IN ('pass', 'fail', 'flaky') THEN passed ELSE 0 END), "
    "SUM(CASE WHEN status IN ('pass', 'fail', 'flaky') THEN samples ELSE 0 END), "
    "MAX(started_at) FROM cases"
)

# Each entry takes the schema from the version before it to its own (index + 1).
TOTALS_VERSION: Final = 4  # the version that added `case_totals`
MIGRATIONS: Final[tuple[tuple[str, ...], ...]] = (
    (
        """CREATE TABLE IF NOT EXISTS runs (
            run_key TEXT PRIMARY KEY,
            run_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            started_at TEXT NOT NULL,
            finished_at TEXT,
            recorded_at TEXT NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            model_sha256 TEXT,
            prompt_variant TEXT NOT NULL,
            sampling TEXT NOT NULL,
            suites TEXT NOT NULL,
            suite_hashes TEXT NOT NULL,
            platform TEXT,
            environment TEXT,
            evalctl_version TEXT,
            git_commit TEXT,
            git_branch TEXT,
            git_dirty INTEGER,
            ci_run_id TEXT,
            ci_url TEXT,
            source TEXT,
            shard TEXT,
            interrupted INTEGER NOT NULL,
            total INTEGER NOT NULL,
            passed INTEGER NOT NULL,
            failed INTEGER NOT NULL,
            errors INTEGER NOT NULL,
            skipped INTEGER NOT NULL,
            pass_rate {real},
            latency_p50 {real},
            latency_p95 {real},
            tokens_in {bigint} NOT NULL,
            tokens_out {bigint} NOT NULL,
            cost_usd {real},
            settings TEXT NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS runs_started ON runs (started_at)",
        """CREATE TABLE IF NOT EXISTS run_suites (
            run_key TEXT NOT NULL,
            suite TEXT NOT NULL,
            started_at TEXT NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            suite_hash TEXT NOT NULL,
            total INTEGER NOT NULL,
            passed INTEGER NOT NULL,
            failed INTEGER NOT NULL,
            errors INTEGER NOT NULL,
            scored_passed INTEGER NOT NULL,
            scored INTEGER NOT NULL,
            pass_rate {real},
            latency_p50 {real},
            latency_p95 {real},
            tokens_in {bigint} NOT NULL,
            tokens_out {bigint} NOT NULL,
            cost_usd {real},
            PRIMARY KEY (run_key, suite)
        )""",
        "CREATE INDEX IF NOT EXISTS run_suites_suite ON run_suites (suite, started_at)",
        """CREATE TABLE IF NOT EXISTS cases (
            run_key TEXT NOT NULL,
            case_key TEXT NOT NULL,
            suite TEXT NOT NULL,
            case_id TEXT NOT NULL,
            started_at TEXT NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            prompt_variant TEXT NOT NULL,
            sampling_key TEXT NOT NULL,
            history_key TEXT NOT NULL,
            definition_hash TEXT NOT NULL,
            status TEXT NOT NULL,
            pass_rate {real},
            passed INTEGER NOT NULL,
            samples INTEGER NOT NULL,
            latency_ms {real} NOT NULL,
            tokens_in {bigint} NOT NULL,
            tokens_out {bigint} NOT NULL,
            checks TEXT NOT NULL,
            error TEXT,
            output TEXT NOT NULL,
            transcript_hash TEXT,
            PRIMARY KEY (run_key, case_key)
        )""",
        "CREATE INDEX IF NOT EXISTS cases_history ON cases (history_key, started_at)",
        "CREATE INDEX IF NOT EXISTS cases_case ON cases (suite, case_id, started_at)",
        """CREATE TABLE IF NOT EXISTS blobs (
            hash TEXT PRIMARY KEY,
            data {blob} NOT NULL
        )""",
    ),
    (
        """CREATE TABLE IF NOT EXISTS verdicts (
            verdict_key TEXT PRIMARY KEY,
            kind TEXT NOT NULL,
            recorded_at TEXT NOT NULL,
            subject TEXT NOT NULL,
            outcome TEXT NOT NULL,
            exit_code INTEGER NOT NULL,
            run_key TEXT,
            git_commit TEXT,
            git_branch TEXT,
            ci_url TEXT,
            body TEXT NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS verdicts_recorded ON verdicts (recorded_at)",
    ),
    (
        # Covering indexes for the questions over every case (flaky, changes, every case's
        # latest): they read these narrow entries, never the wide rows with checks and
        # answers (benchmarks/bench_history.py).
        "CREATE INDEX IF NOT EXISTS cases_outcomes "
        "ON cases (history_key, status, passed, samples, started_at, suite, provider, model)",
        "CREATE INDEX IF NOT EXISTS cases_series ON cases (history_key, started_at, run_key, "
        "status, pass_rate, passed, samples, latency_ms, definition_hash, suite, case_id, "
        "provider, model, prompt_variant)",
    ),
    (
        # Each case history's totals, kept at record time (evalctl.history.record): the
        # questions over every case's whole history (flaky, changes, every case's latest)
        # read these hundred rows, not a hundred thousand runs of cases.
        """CREATE TABLE IF NOT EXISTS case_totals (
            history_key TEXT PRIMARY KEY,
            suite TEXT NOT NULL,
            case_id TEXT NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            prompt_variant TEXT NOT NULL,
            runs INTEGER NOT NULL,
            scored_passed {bigint} NOT NULL,
            scored_samples {bigint} NOT NULL,
            last_started TEXT NOT NULL
        )""",
        "INSERT INTO case_totals " + TOTALS_SELECT + " GROUP BY history_key",
        # What these two served, `cases_series` serves (the same leading columns, and every
        # column they hold): each index less is less to write for every case recorded.
        "DROP INDEX IF EXISTS cases_outcomes",
        "DROP INDEX IF EXISTS cases_history",
    ),
)
SCHEMA_VERSION: Final = len(MIGRATIONS)


def display_url(url: str) -> str:
    """The store's URL with any password replaced by `***`: the form that is printed."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


def _sqlite_path(url: str) -> Path:
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///") :])
    if url.startswith("sqlite://"):
        raise BadInputError(
            f"store URL {url!r}: an SQLite URL is sqlite:///PATH (three slashes)",
            field="store",
        )
    return Path(url).expanduser()


def is_postgres(url: str) -> bool:
    return url.startswith(("postgresql://", "postgres://"))


class Store:
    """An open store: one DB-API connection and its dialect. Close it (or use `with`)."""

    def __init__(self, conn: Any, dialect: Dialect, url: str) -> None:
        self.conn = conn
        self.dialect = dialect
        self.url = display_url(url)
        # The schema version it was opened at (an older one only where a test asks for it).
        self.version = SCHEMA_VERSION

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        # Closing a broken connection must not mask the error that broke it.
        with contextlib.suppress(Exception):
            self.conn.close()

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read; SQL written with `?` placeholders."""
        try:
            cur = self.conn.cursor()
            try:
                cur.execute(self.dialect.sql(sql), tuple(params))
                rows: list[tuple[Any, ...]] = [tuple(r) for r in cur.fetchall()]
            finally:
                cur.close()
            if self.dialect is POSTGRES:
                self.conn.rollback()  # end the implicit read transaction
            return rows
        except Exception as exc:
            raise _db_error(self, exc, "read") from None

    @contextmanager
    def writing(self) -> Iterator[Any]:
        """One write transaction: a cursor whose `execute` takes `?` SQL via `run`/`many`.
        Committed at the end, rolled back on any error."""
        cur = self.conn.cursor()
        try:
            if self.dialect is SQLITE:
                # IMMEDIATE: take the write lock now (waiting up to the busy timeout), rather
                # than fail later on upgrading a read lock another writer also holds.
                cur.execute("BEGIN IMMEDIATE")
            yield cur
            self.conn.commit()
        except BaseException:
            with contextlib.suppress(Exception):  # the original error is the one to report
                self.conn.rollback()
            raise
        finally:
            cur.close()

    def run(self, cur: Any, sql: str, params: Sequence[Any] = ()) -> None:
        cur.execute(self.dialect.sql(sql), tuple(params))

    def many(self, cur: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if rows:
            cur.executemany(self.dialect.sql(sql), rows)  # both drivers take any sequences

    def schema_version(self) -> int:
        rows = self.query("SELECT version FROM evalctl_schema")
        return int(rows[0][0]) if rows else 0

    def blob(self, value: Any) -> Any:
        """A value for a blob column (psycopg and sqlite3 both take bytes)."""
        return value


def open_store(url: str, *, migrate_to: int = SCHEMA_VERSION) -> Store:
    """Open (creating where needed) the store at `url` and bring its schema to `migrate_to`
    (the current version; tests ask for an older one to test the upgrade)."""
    store = _open_postgres(url) if is_postgres(url) else _open_sqlite(url)
    try:
        _migrate(store, migrate_to)
    except BaseException:
        store.close()
        raise
    return store


def _open_sqlite(url: str) -> Store:
    path = _sqlite_path(url)
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not path.exists():
            # Created 0600 from the start (O_EXCL: never loosen a file someone else made);
            # SQLite gives its -wal and -shm files the database file's mode.
            with contextlib.suppress(FileExistsError):
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        conn = sqlite3.connect(
            str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(
            f"cannot open the run store {path}: {exc}",
            hint="set --store, EVALCTL_STORE or [history] store to a writable place, "
            "or turn it off with --no-store",
        ) from None
    store = Store(conn, SQLITE, str(path))
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        # WAL: readers never block the writer, and the writer never blocks readers.
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.Error as exc:
        # A read-only file cannot switch to WAL: it still reads.
        if "readonly" not in str(exc) and "read-only" not in str(exc):
            store.close()
            raise _db_error(store, exc, "open") from None
    # sqlite3's implicit transactions are off (isolation_level=None); `writing` begins its own.
    store.conn = _SqliteConn(conn)
    return store


class _SqliteConn:
    """sqlite3 in autocommit mode, with commit/rollback that end an explicit BEGIN."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def cursor(self) -> sqlite3.Cursor:
        return self._conn.cursor()

    def commit(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("COMMIT")

    def rollback(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def close(self) -> None:
        self._conn.close()


def _open_postgres(url: str) -> Store:
    try:
        import psycopg
    except ImportError:
        raise EvalctlError(
            f"the store {display_url(url)} is PostgreSQL, and its driver (psycopg 3) is not "
            "installed",
            hint=f"pip install 'evalctl[{POSTGRES_EXTRA}]' (`make setup` installs it)",
            code=ExitCode.BAD_INPUT,
        ) from None
    try:
        conn = psycopg.connect(url, connect_timeout=10)
    except Exception as exc:
        raise StoreError(
            f"cannot connect to the run store {display_url(url)}: "
            f"{_without_password(str(exc), url)}",
            hint="check the server is up and the URL is right, or turn the store off with "
            "--no-store",
        ) from None
    return Store(conn, POSTGRES, url)


def _migrate(store: Store, target: int) -> None:
    d = store.dialect
    try:
        current = _current_version(store)
        if current > SCHEMA_VERSION:
            raise StoreError(
                f"the run store {store.url} has schema version {current}; this evalctl "
                f"knows up to {SCHEMA_VERSION}",
                hint="upgrade evalctl, or point --store at another store",
            )
        store.version = max(current, target)
        if current >= target:
            return
        with store.writing() as cur:
            if d is POSTGRES:
                cur.execute("SELECT pg_advisory_xact_lock(%s)", (_PG_LOCK,))
            cur.execute("CREATE TABLE IF NOT EXISTS evalctl_schema (version INTEGER NOT NULL)")
            cur.execute("SELECT version FROM evalctl_schema")
            row = cur.fetchone()
            # Read again under the lock: another writer may have upgraded it meanwhile.
            current = int(row[0]) if row else 0
            for version in range(current, target):
                for statement in MIGRATIONS[version]:
                    cur.execute(d.ddl(statement))
            if row is None:
                cur.execute(d.sql("INSERT INTO evalctl_schema (version) VALUES (?)"), (target,))
            elif current < target:
                cur.execute(d.sql("UPDATE evalctl_schema SET version = ?"), (target,))
    except EvalctlError:
        raise
    except Exception as exc:
        raise _db_error(store, exc, "upgrade") from None


def _current_version(store: Store) -> int:
    if store.dialect is SQLITE:
        exists = store.query(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'evalctl_schema'"
        )
    else:
        exists = store.query("SELECT to_regclass('evalctl_schema')")
        exists = [r for r in exists if r[0] is not None]
    return store.schema_version() if exists else 0


def _without_password(text: str, url: str) -> str:
    password = urlsplit(url).password
    return text.replace(password, "***") if password else text


def _db_error(store: Store, exc: BaseException, doing: str) -> StoreError:
    message = re.sub(r"\s+", " ", str(exc)).strip()
    return StoreError(f"run store {store.url}: {doing} failed: {message}")
