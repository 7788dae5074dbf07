"""Recording through the one door: real `evalctl run`s (scripted, model-free) observed by
the run store; a store that fails never fails the run; which store a command uses."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from evalctl.history import queries
from evalctl.history.store import open_store
from evalctl.results.io import read_run
from evalctl.results.models import CaseResult, RunResult
from evalctl.runner.events import RunListener
from tests.cli_helpers import run_cli
from tests.history_helpers import PostgresServer, postgres_server, store_url

__all__ = ["postgres_server", "store_url"]  # fixtures, used by name

PERFECT = """
[[cases."echo/hello"]]
content = "hello"

[[cases."echo/shout"]]
tool_calls = [{ name = "upper", arguments = { text = "hi" } }]

[[cases."echo/shout"]]
content = "HI"
"""


@pytest.fixture
def scripted(echo_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.chdir(tmp_path)
    script = tmp_path / "script.toml"
    script.write_text(PERFECT)
    return ["--provider", "scripted", "--cases", str(echo_suite), "--script", str(script)]


def _run(capsys: pytest.CaptureFixture[str], scripted: list[str], *more: str) -> RunResult:
    done = run_cli(capsys, "run", *scripted, "--json", *more)
    assert done.code == 0, done.err
    return read_run(Path(json.loads(done.out)["results_path"]))


def test_a_run_is_recorded_in_the_default_store(
    scripted: list[str], capsys: pytest.CaptureFixture[str], evalctl_home: Path
) -> None:
    run = _run(capsys, scripted)
    stores = list(evalctl_home.rglob("history.sqlite"))
    assert len(stores) == 1
    assert stat.S_IMODE(stores[0].stat().st_mode) == 0o600
    listed = run_cli(capsys, "history", "list", "--json")
    assert listed.code == 0, listed.err
    runs = json.loads(listed.out)["runs"]
    assert [r["run_id"] for r in runs] == [run.run_id]
    assert runs[0]["total"] == 2
    with open_store(str(stores[0])) as store:
        detail = queries.get_run(store, run.run_id)
        assert detail is not None
        shout = next(c for c in detail.cases if c.case_id == "shout")
        assert shout.transcript is not None
        assert shout.transcript.tool_calls[0]["name"] == "upper"


def test_no_store_and_store_off_record_nothing(
    scripted: list[str],
    capsys: pytest.CaptureFixture[str],
    evalctl_home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _run(capsys, scripted, "--no-store")
    monkeypatch.setenv("EVALCTL_STORE", "off")
    _run(capsys, scripted)
    assert list(evalctl_home.rglob("history.sqlite")) == []


def test_store_flag_env_and_config(
    scripted: list[str],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _run(capsys, scripted, "--store", f"sqlite:///{tmp_path / 'flag.db'}")
    monkeypatch.setenv("EVALCTL_STORE", str(tmp_path / "env.db"))
    _run(capsys, scripted)
    monkeypatch.delenv("EVALCTL_STORE")
    (tmp_path / "evalctl.toml").write_text(f'[history]\nstore = "{tmp_path / "toml.db"}"\n')
    _run(capsys, scripted)
    for name in ("flag.db", "env.db", "toml.db"):
        with open_store(str(tmp_path / name)) as store:
            assert queries.count_runs(store) == 1, name


def test_a_history_store_from_a_suites_evalctl_toml_is_ignored(
    echo_suite: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    evalctl_home: Path,
) -> None:
    """An evalctl.toml that came with the suites (found from their directory, not from the
    working directory) must not choose where their runs are sent."""
    elsewhere = tmp_path / "pr-store.db"
    (echo_suite.parent / "evalctl.toml").write_text(f'[history]\nstore = "{elsewhere}"\n')
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    script = work / "script.toml"
    script.write_text(PERFECT)
    done = run_cli(
        capsys, "run", "--provider", "scripted", "--cases", str(echo_suite),
        "--script", str(script), "--json",
    )  # fmt: skip
    assert done.code == 0, done.err
    assert not elsewhere.exists()
    assert len(list(evalctl_home.rglob("history.sqlite"))) == 1


def _unreachable(tmp_path: Path, server: PostgresServer) -> list[str]:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    return [
        str(blocker / "history.sqlite"),  # under a file: cannot be created
        f"postgresql://{server.user}@127.0.0.1:1/none",  # no server there
        read_only_database(server),
    ]


def read_only_database(server: PostgresServer) -> str:
    import psycopg

    url = server.new_database()
    name = url.rsplit("/", 1)[1]
    with psycopg.connect(server.url(), autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {name} SET default_transaction_read_only = on")
    return url


def test_a_store_that_fails_never_fails_the_run(
    scripted: list[str],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    postgres_server: PostgresServer,
) -> None:
    for url in _unreachable(tmp_path, postgres_server):
        without = run_cli(capsys, "run", *scripted, "--json", "--no-store")
        done = run_cli(capsys, "run", *scripted, "--json", "--store", url)
        assert done.code == without.code == 0, (url, done.err)
        result = read_run(Path(json.loads(done.out)["results_path"]))
        assert [c.status for c in result.cases] == ["pass", "pass"]
        assert result.finished_at is not None
        warnings = [line for line in done.err.splitlines() if "run store" in line]
        assert len(warnings) == 1, (url, done.err)
        assert "history import" in done.err


def test_verdicts_are_recorded(
    scripted: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    url = str(tmp_path / "verdicts.db")
    made = run_cli(capsys, "baseline", *scripted, "--store", url, "--json")
    assert made.code == 0, made.err
    ran = run_cli(capsys, "run", *scripted, "--store", url, "--out", "now", "--json")
    assert ran.code == 0, ran.err
    compared = run_cli(capsys, "compare", "baselines/scripted.json", "now", "--store", url)
    assert compared.code == 0, compared.err
    with open_store(url) as store:
        kinds = [(v.kind, v.outcome, v.exit_code) for v in queries.list_verdicts(store)]
        assert sorted(kinds) == [("baseline", "written", 0), ("compare", "pass", 0)]
        assert queries.count_runs(store) == 2  # the baseline's own run, and `now`


class Recorder(RunListener):
    def __init__(self) -> None:
        self.events: list[str] = []

    def run_started(self, header: RunResult, out_dir: Path) -> None:
        self.events.append(f"started {len(header.cases)}")

    def case_finished(self, case: CaseResult) -> None:
        self.events.append(f"case {case.key}")

    def run_finished(self, result: RunResult, results_path: Path) -> None:
        self.events.append(f"finished {len(result.cases)} {results_path.name}")


class Broken(RunListener):
    def __init__(self) -> None:
        self.failures: list[str] = []

    def case_finished(self, case: CaseResult) -> None:
        raise OSError("disk full")

    def failed(self, event: str, error: Exception) -> None:
        self.failures.append(f"{event}: {error}")


def test_listeners_see_every_event_and_cannot_break_the_run(
    echo_suite: Path, tmp_path: Path
) -> None:
    from evalctl.config import load_settings
    from evalctl.runner.api import RunRequest
    from evalctl.runner.execute import execute_run

    script = tmp_path / "script.toml"
    script.write_text(PERFECT)
    seen, broken = Recorder(), Broken()
    request = RunRequest(
        provider="scripted",
        script=script,
        paths=[echo_suite],
        out_dir=tmp_path / "out",
        show_progress=False,
        listeners=(broken, seen),
    )
    outcome = execute_run(request, load_settings(cwd=tmp_path), {})
    assert seen.events == [
        "started 0",
        "case echo/hello",
        "case echo/shout",
        "finished 2 results.json",
    ]
    assert broken.failures == ["case_finished: disk full"] * 2
    assert [c.status for c in outcome.result.cases] == ["pass", "pass"]
