"""`names_from.sqlite` is a read-only query (issue 38, deliver 3): one SELECT (or WITH ...
SELECT) statement, so VACUUM INTO, ATTACH, PRAGMA and writes are refused by `cases validate`
and `run` (exit 2 naming the file and field) and create nothing; the query ends at the suite's
`timeout_s`, and SIGTERM or Ctrl-C end a run that waits on it. Real SQLite files, the real CLI."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evalctl.assertions.names_in import query_problem, sqlite_names, sqlite_query_refusal
from evalctl.errors import BadInputError
from tests.cli_helpers import run_cli
from tests.conftest import REPO

# Never yields a row and never ends: only the deadline or a signal stops it.
ENDLESS = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT 'n' FROM c WHERE x < 0"
)

SUITE = """\
[suite]
name = "wines"
kind = "assert"
timeout_s = {timeout}

[[case]]
id = "c1"
input = {{ prompt = "A red?" }}
[[case.assert]]
type = "names-in"
pattern = '\\[WINE:\\d+\\]\\s*\\n([^\\n]+)'
names_from = {{ sqlite = "wines.db", query = "{query}" }}
"""

REPLIES = '[[cases."wines/c1"]]\ncontent = "[WINE:1]\\nChateau Margaux"\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project (a git root) with a real catalog, wines.db, and a reply script."""
    root = tmp_path / "project"
    root.mkdir()
    (root / ".git").mkdir()
    with sqlite3.connect(root / "wines.db") as db:
        db.execute("CREATE TABLE wines (name TEXT)")
        db.executemany("INSERT INTO wines VALUES (?)", [("Chateau Margaux",), ("Barolo",)])
    db.close()
    (root / "replies.toml").write_text(REPLIES)
    monkeypatch.chdir(root)
    return root


def _suite(project: Path, query: str, timeout: float = 30) -> Path:
    path = project / "wines.toml"
    path.write_text(SUITE.format(query=query.replace('"', '\\"'), timeout=timeout))
    return path


def _run_args(project: Path, suite: Path, out: str = "out") -> list[str]:
    return [
        *("run", "--provider", "scripted", "--script", str(project / "replies.toml")),
        *("--cases", str(suite), "--out", str(project / out), "--no-progress"),
    ]


WRITES = {
    "vacuum-into": "VACUUM INTO '{victim}'",
    "attach": "ATTACH DATABASE '{victim}' AS other",
    "insert": "INSERT INTO wines VALUES ('Invented')",
    "with-insert": "WITH x AS (SELECT 'Invented') INSERT INTO wines SELECT * FROM x",
    "two-statements": "SELECT name FROM wines; DROP TABLE wines",
    "pragma": "PRAGMA writable_schema = ON",
    "load-extension": "SELECT load_extension('{victim}')",
}


@pytest.mark.parametrize("way", sorted(WRITES))
def test_a_query_that_is_not_one_select_is_refused_by_validate_and_run(
    project: Path, way: str, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = project.parent / "written-by-the-query.db"
    suite = _suite(project, WRITES[way].format(victim=victim))
    before = (project / "wines.db").read_bytes()
    for args in (["cases", "validate", str(suite)], _run_args(project, suite)):
        result = run_cli(capsys, *args)
        assert result.code == 2, result.err
        assert str(suite) in result.err
        assert "names_from.query" in result.err and "case 'c1'" in result.err
        assert "one SELECT" in result.err
    assert not victim.exists()
    assert not (project / "out" / "results.json").exists()
    assert (project / "wines.db").read_bytes() == before


def test_selects_with_and_recursive_ones_included_are_read(project: Path) -> None:
    db = str(project / "wines.db")
    assert sqlite_names(db, "SELECT name FROM wines ORDER BY name") == ["Barolo", "Chateau Margaux"]
    counted = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3) "
    assert sqlite_names(db, counted + "SELECT 'w' || x FROM c") == ["w1", "w2", "w3"]
    # Comments and strings holding ';' are one statement still.
    assert query_problem("-- the catalog\n/* all */ SELECT ';' FROM wines;") is None
    assert sqlite_query_refusal(db, "SELECT name FROM wines") is None


def test_a_refusal_at_scoring_time_writes_nothing(project: Path) -> None:
    """Where the database appears only at run time (built by the application), the same
    rule holds when the check reads it: the authorizer, not only the first word."""
    victim = project.parent / "attached.db"
    db = str(project / "wines.db")
    with pytest.raises(BadInputError) as info:
        sqlite_names(db, f"WITH x AS (SELECT 1) SELECT * FROM x, pragma_database_list('{victim}')")
    assert info.value.field == "names_from.query" and info.value.file == db
    with pytest.raises(BadInputError) as info:
        sqlite_names(db, "VACUUM INTO 'x.db'")
    assert "one SELECT" in info.value.message
    assert not victim.exists() and not (project / "x.db").exists()


def test_the_query_ends_at_its_deadline(project: Path) -> None:
    with pytest.raises(BadInputError) as info:
        sqlite_names(str(project / "wines.db"), ENDLESS, timeout_s=0.5)
    assert "ran past the suite's timeout_s (0.5 s)" in info.value.message


def test_a_run_whose_query_never_ends_finishes_at_the_suite_timeout(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _suite(project, ENDLESS, timeout=1)
    result = run_cli(capsys, *_run_args(project, suite), "--json")
    assert result.code in (0, 3), result.err
    text = (project / "out" / "results.json").read_text()
    assert "ran past the suite's timeout_s (1 s)" in text


def _db_open(pid: int, db: Path) -> bool:
    fds = Path(f"/proc/{pid}/fd")
    try:
        return any(os.path.realpath(fd) == str(db.resolve()) for fd in fds.iterdir())
    except OSError:  # the process ended, or a descriptor closed while listed
        return False


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc to see the query")
@pytest.mark.parametrize(
    ("signum", "jobs"), [(signal.SIGTERM, "1"), (signal.SIGINT, "1"), (signal.SIGTERM, "2")]
)
def test_sigterm_and_ctrl_c_end_a_run_waiting_on_the_query(
    project: Path, signum: signal.Signals, jobs: str
) -> None:
    """With -j 1 the query's case runs in the main thread, which the signal reaches; with
    -j 2 in a worker thread, which the interpreter joins at exit."""
    suite = _suite(project, ENDLESS, timeout=600)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalctl.cli", *_run_args(project, suite), "-j", jobs],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # Inside the query: the database open in two looks a while apart (validation's
        # look at the query opens it only for an instant).
        seen = 0
        for _ in range(1200):
            if proc.poll() is not None:
                break
            seen = seen + 1 if _db_open(proc.pid, project / "wines.db") else 0
            if seen >= 3:
                break
            time.sleep(0.25)
        assert seen >= 3, proc.communicate(timeout=5)
        proc.send_signal(signum)
        # The deadline is 600 s: ending well before it means the signal ended the query.
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert "Traceback" not in err
