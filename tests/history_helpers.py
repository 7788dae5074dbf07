"""A real PostgreSQL 15 server for the run store's tests, and stores on it and on SQLite.

`postgres_server` starts one server per test session with the machine's own binaries
(Debian's `postgresql` package: `make setup-postgres` installs it, .ci/run does so on CI),
in a temporary directory, listening on 127.0.0.1 on a free port and on a socket in that
directory, and stops it at the end. PostgreSQL refuses to run as root, so as root it runs
as the `postgres` user (runuser), in a directory that user owns. The tests are never
skipped for want of a server: without the binaries they fail, saying how to install them.

`store_url` is parametrized over both back ends: each test gets a fresh SQLite file or a
fresh PostgreSQL database, so the same test runs the one code path against both.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

PG_GLOB = "/usr/lib/postgresql/*/bin"


def pg_bin() -> Path | None:
    """The directory of initdb and pg_ctl: Debian's versioned one, else on PATH."""
    found = sorted(glob.glob(PG_GLOB))
    if found:
        return Path(found[-1])
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    port: int
    user: str
    directory: Path

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        import psycopg

        name = "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


def _as_owner(argv: list[str], owner: str | None) -> list[str]:
    return ["runuser", "-u", owner, "--", *argv] if owner else argv


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    binaries = pg_bin()
    if binaries is None:
        pytest.fail(
            "PostgreSQL's initdb and pg_ctl are not installed: the run store's tests need a "
            "real server (`make setup-postgres`, or apt-get install postgresql)"
        )
    owner = "postgres" if os.geteuid() == 0 else None
    user = owner or os.environ.get("USER") or "postgres"
    directory = Path(tempfile.mkdtemp(prefix="evpg-", dir="/tmp"))
    data = directory / "data"
    if owner:
        shutil.chown(directory, owner, owner)
    directory.chmod(0o700)
    subprocess.run(
        _as_owner(
            [str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", user, "-E", "UTF8"],
            owner,
        ),
        check=True,
        capture_output=True,
    )
    port = _free_port()
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {directory} -c fsync=off"
    started = subprocess.run(
        _as_owner(
            [
                str(binaries / "pg_ctl"),
                "-D",
                str(data),
                "-o",
                options,
                "-l",
                str(directory / "log"),
                "-w",
                "-t",
                "120",
                "start",
            ],
            owner,
        ),
        capture_output=True,
        text=True,
    )
    if started.returncode != 0:
        log = (directory / "log").read_text(errors="replace")[-2000:]
        pytest.fail(f"PostgreSQL did not start: {started.stderr}\n{log}")
    server = PostgresServer(port, user, directory)
    try:
        _wait_ready(server)
        yield server
    finally:
        subprocess.run(
            _as_owner([str(binaries / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"], owner),
            capture_output=True,
        )
        shutil.rmtree(directory, ignore_errors=True)


def _wait_ready(server: PostgresServer) -> None:
    import psycopg

    deadline = time.monotonic() + 60
    while True:
        try:
            psycopg.connect(server.url(), connect_timeout=5).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store on each back end."""
    if request.param == "sqlite":
        return str(tmp_path / "store" / "history.sqlite")
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.new_database()


@contextmanager
def postgres_database() -> Iterator[str | None]:
    """For the benchmarks: a fresh database on a PostgreSQL server started for the run (the
    fixture above, driven by hand), or None, said on stdout, where psycopg or the server
    binaries are missing."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        print("\nPostgreSQL: psycopg is not installed (`make setup`); skipped")
        yield None
        return
    if pg_bin() is None:
        print("\nPostgreSQL: no server binaries (`make setup-postgres`); skipped")
        yield None
        return
    fixture = postgres_server.__wrapped__()  # type: ignore[attr-defined]
    server = next(fixture)
    try:
        yield server.new_database()
    finally:
        next(fixture, None)
