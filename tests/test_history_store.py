"""The run store (evalctl.history): the issue's scenario and the store's promises, each on
SQLite and on a real PostgreSQL server (tests/history_helpers.py), through one code path."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalctl.history import queries
from evalctl.history.record import Provenance, record_run, run_key
from evalctl.history.store import SCHEMA_VERSION, open_store
from evalctl.results.io import write_run
from evalctl.results.models import CaseResult, RunResult, Shard
from evalctl.sharding import in_shard
from tests import factories
from tests.cli_helpers import run_cli
from tests.conftest import REPO
from tests.history_helpers import postgres_server, store_url

__all__ = ["postgres_server", "store_url"]  # fixtures, used by name

RUNS = 40
BREAKS_AT = 25  # 1-based: runs 25..40 fail
FLAKY = ("often-a", "often-b")


def _case(key: str, passed: bool, i: int) -> CaseResult:
    # A failing case fails its check; the check list is the case's, whatever the outcome.
    return factories.case(
        key,
        "pass" if passed else "fail",
        latency_ms=100.0 + i,
        input_tokens=10,
        output_tokens=5 + i,
        failed_checks=() if passed else ("answer",),
    )


def scenario_run(i: int) -> RunResult:
    """Run i (0-based) of 40: `breaks` passes until run 25 and fails from it; the two
    `often-*` cases pass about half the time, in patterns of their own; `steady` passes."""
    cases = [
        _case("shop/breaks", i + 1 < BREAKS_AT, i),
        _case("shop/often-a", i % 2 == 0, i),
        _case("shop/often-b", (i * 7) % 3 == 0 or i % 4 == 1, i),
        _case("shop/steady", True, i),
    ]
    run = factories.run(cases, run_id=f"20260101-{i:06d}-scripted-{i:04x}")
    return run.model_copy(
        update={
            "started_at": f"2026-01-{1 + i // 24:02d}T{i % 24:02d}:00:00+00:00",
            "finished_at": f"2026-01-{1 + i // 24:02d}T{i % 24:02d}:01:00+00:00",
        }
    )


def commit_of(i: int) -> str:
    return f"{i:02d}" + "c0ffee" * 6


@pytest.fixture
def scenario(store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """40 results folders imported one by one, each at its own fake commit, via the CLI."""
    for i in range(RUNS):
        folder = tmp_path / "runs" / f"run{i:02d}"
        write_run(scenario_run(i), folder)
        done = run_cli(
            capsys, "history", "import", str(folder), "--store", store_url,
            "--commit", commit_of(i), "--branch", "main", "--json",
        )  # fmt: skip
        assert done.code == 0, done.err
    return store_url


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, object]:
    done = run_cli(capsys, "history", *args, "--json")
    assert done.code == 0, done.err
    data = json.loads(done.out)
    assert isinstance(data, dict)
    return data


def test_changes_names_the_broken_case_at_run_25_with_its_commit(
    scenario: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _json(capsys, "changes", "--store", scenario)
    changes = out["changes"]
    assert isinstance(changes, list)
    assert [(c["suite"], c["case_id"]) for c in changes] == [("shop", "breaks")]
    change = changes[0]
    assert change["run_id"] == scenario_run(BREAKS_AT - 1).run_id
    assert change["git_commit"] == commit_of(BREAKS_AT - 1)
    assert change["direction"] == "drop"
    assert (change["before_passed"], change["before_samples"]) == (24, 24)
    assert (change["after_passed"], change["after_samples"]) == (0, 16)
    assert change["adjusted_p"] < 0.05
    assert out["correction"] == "bonferroni"


def test_flaky_ranks_the_half_passing_cases_first(
    scenario: str, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = _json(capsys, "flaky", "--store", scenario)["cases"]
    assert isinstance(cases, list)
    assert {c["case_id"] for c in cases[:2]} == set(FLAKY)
    # The case that changed once for good is a change, not a flake.
    assert "breaks" not in {c["case_id"] for c in cases}
    for c in cases[:2]:
        assert c["flips"] >= 10
        assert c["ci_low"] < c["pass_rate"] < c["ci_high"]


def test_case_shows_the_strip_and_each_runs_commit(
    scenario: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _json(capsys, "case", "shop/breaks", "--store", scenario)
    assert out["strip"] == "." * 24 + "x" * 16
    history = out["history"]
    assert isinstance(history, dict)
    runs = history["runs"]
    assert [r["git_commit"] for r in runs] == [commit_of(i) for i in range(RUNS)]
    assert [r["changepoint"] for r in runs].index(True) == BREAKS_AT - 1
    last = _json(capsys, "case", "shop/breaks", "--store", scenario, "--last", "5")
    assert last["strip"] == "xxxxx"
    shown = run_cli(capsys, "history", "case", "shop/breaks", "--store", scenario)
    assert "." * 24 + "x" * 16 in shown.out


def test_list_trend_filters_and_prune(scenario: str, capsys: pytest.CaptureFixture[str]) -> None:
    listed = _json(capsys, "list", "--store", scenario, "--limit", "3")
    assert listed["total"] == RUNS
    runs = listed["runs"]
    assert isinstance(runs, list)
    assert [r["run_id"] for r in runs] == [scenario_run(i).run_id for i in (39, 38, 37)]
    since = _json(capsys, "list", "--store", scenario, "--since", "2026-01-02")
    assert since["total"] == RUNS - 24
    assert _json(capsys, "list", "--store", scenario, "--branch", "dev")["total"] == 0
    assert _json(capsys, "list", "--store", scenario, "--suite", "other")["total"] == 0

    points = _json(capsys, "trend", "shop", "--store", scenario)["points"]
    assert isinstance(points, list)
    assert len(points) == RUNS
    assert points[0]["pass_rate"] == pytest.approx(1.0 if 0 % 2 == 0 else 0.75)
    assert points[-1]["latency_p50"] is not None
    assert points[-1]["tokens_out"] == 4 * (5 + RUNS - 1)

    pruned = _json(capsys, "prune", "--store", scenario, "--keep", "10")
    assert (pruned["deleted"], pruned["remaining"]) == (RUNS - 10, 10)


def test_importing_twice_stores_once(store_url: str, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    write_run(scenario_run(0), folder)
    from evalctl.history.imports import import_paths

    with open_store(store_url) as store:
        first = import_paths(store, [folder], Provenance())
        again = import_paths(store, [folder, folder / "results.json"], Provenance())
        assert [d.new for d in first] == [True]
        assert [d.new for d in again] == [False]
        assert queries.count_runs(store) == 1


def test_a_run_recorded_live_and_imported_later_is_one_run(store_url: str, tmp_path: Path) -> None:
    run = scenario_run(3)
    path = write_run(run, tmp_path / "run")
    from evalctl.history.imports import import_paths
    from evalctl.results.io import read_run

    assert run_key(read_run(path)) == run_key(run)
    with open_store(store_url) as store:
        record_run(store, run, Provenance(git_commit="abc"))
        assert [d.new for d in import_paths(store, [path.parent], Provenance())] == [False]
        assert queries.count_runs(store) == 1


def test_two_runs_alike_in_the_same_second_are_two_runs_and_merges_are_one(
    store_url: str,
) -> None:
    run = scenario_run(4)
    twin = run.model_copy(update={"run_id": run.run_id + "-again"})
    assert run_key(twin) != run_key(run)  # a fast provider's two runs, identical outcomes
    merged = run.model_copy(update={"run_id": "20261206-040000-scripted-merged-ab12"})
    remerged = run.model_copy(update={"run_id": "20261206-040100-scripted-merged-cd34"})
    assert run_key(merged) == run_key(remerged)  # `merge` names the same shards afresh
    with open_store(store_url) as store:
        record_run(store, run, Provenance())
        record_run(store, twin, Provenance())
        assert queries.count_runs(store) == 2


def _shards(count: int) -> list[RunResult]:
    keys = [f"shop/c{n}" for n in range(12)]
    shards = []
    for index in range(1, count + 1):
        mine = [k for k in keys if in_shard(k, index, count)]
        run = factories.run([_case(k, True, 1) for k in mine], run_id=f"shard{index}")
        run.settings.shard = Shard(index=index, count=count, selection=keys)
        shards.append(run)
    return shards


def test_shards_imported_together_are_one_run(store_url: str, tmp_path: Path) -> None:
    from evalctl.history.imports import import_paths

    for n, shard in enumerate(_shards(3), start=1):
        write_run(shard, tmp_path / "artifacts" / f"shard-{n}")
    with open_store(store_url) as store:
        done = import_paths(store, [tmp_path / "artifacts"], Provenance())
        assert [(d.shards, d.cases) for d in done] == [(3, 12)]
        assert queries.count_runs(store) == 1
        again = import_paths(store, [tmp_path / "artifacts"], Provenance())
        assert [d.new for d in again] == [False]


_IMPORT_ONE = """
import sys
from pathlib import Path
from evalctl.history.imports import import_paths
from evalctl.history.record import Provenance
from evalctl.history.store import open_store
with open_store(sys.argv[1]) as store:
    import_paths(store, [Path(p) for p in sys.argv[2:]], Provenance())
"""


def test_shards_imported_in_parallel_lose_no_run(store_url: str, tmp_path: Path) -> None:
    """Eight processes each import their shard into one store at once (each a separate
    run: the shards are not imported together); every one is there after."""
    count = 8
    folders = []
    for n, shard in enumerate(_shards(count), start=1):
        folders.append(tmp_path / f"shard-{n}")
        write_run(shard, folders[-1])
    open_store(store_url).close()  # the schema exists; the writers race on the rows
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _IMPORT_ONE, store_url, str(folder)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for folder in folders
    ]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * count, errors
    with open_store(store_url) as store:
        runs = queries.list_runs(store, limit=None)
        assert sorted(r.run_id for r in runs) == sorted(f"shard{n}" for n in range(1, 9))
        assert sorted(r.shard or "" for r in runs) == sorted(f"{n}/8" for n in range(1, 9))


def test_parallel_writers_creating_the_schema_lose_nothing(store_url: str, tmp_path: Path) -> None:
    """Writers that open a store nobody created yet race on its schema too."""
    folders = []
    for i in range(4):
        folders.append(tmp_path / f"run{i}")
        write_run(scenario_run(i), folders[-1])
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _IMPORT_ONE, store_url, str(f)],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        for f in folders
    ]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
    with open_store(store_url) as store:
        assert queries.count_runs(store) == 4
        assert store.schema_version() == SCHEMA_VERSION


def test_an_older_schema_is_upgraded_on_open(store_url: str) -> None:
    with open_store(store_url, migrate_to=1) as old:
        assert old.schema_version() == 1
        record_run(old, scenario_run(0), Provenance())
    with open_store(store_url) as store:
        assert store.schema_version() == SCHEMA_VERSION
        assert queries.count_runs(store) == 1
        assert queries.list_verdicts(store) == []  # the table version 2 added


def _totals_recounted(store: Any) -> bool:
    """Whether the totals kept at record time are those counted afresh from `cases`."""
    from evalctl.history.store import TOTALS_SELECT

    kept = store.query("SELECT * FROM case_totals ORDER BY history_key")
    counted = store.query(f"{TOTALS_SELECT} GROUP BY history_key ORDER BY history_key")
    return bool(kept) and kept == counted


def test_case_totals_follow_recording_replacing_and_pruning(store_url: str) -> None:
    """The totals the questions over whole histories read are kept right at record time,
    upgrade, resume and prune: the questions answer as they do from the runs themselves."""
    from evalctl.history.record import prune

    with open_store(store_url, migrate_to=3) as old:
        for i in range(4):
            record_run(old, scenario_run(i), Provenance())
    with open_store(store_url) as store:
        assert _totals_recounted(store)
        for i in range(4, 12):
            record_run(store, scenario_run(i), Provenance())
        partial = scenario_run(12)
        partial.interrupted = True
        partial.cases = partial.cases[:2]
        record_run(store, partial, Provenance())
        record_run(store, scenario_run(12), Provenance())  # the resumed run replaces it
        assert queries.count_runs(store) == 13
        assert _totals_recounted(store)
        whole = "2000-01-01"  # the same window, read from the runs rather than the totals
        assert queries.flaky_cases(store) == queries.flaky_cases(store, since=whole)
        assert [f.case_id for f in queries.flaky_cases(store)][:2] == sorted(FLAKY)
        assert [c.runs for c in queries.latest_cases(store)] == [13] * 4
        assert prune(store, keep=5) == 8
        assert _totals_recounted(store)
        assert [c.runs for c in queries.latest_cases(store)] == [5] * 4
        assert queries.changes(store) == queries.changes(store, since=whole)


def test_a_store_from_a_newer_evalctl_is_refused(store_url: str) -> None:
    from evalctl.history.store import StoreError

    with open_store(store_url) as store, store.writing() as cur:
        store.run(cur, "UPDATE evalctl_schema SET version = ?", [SCHEMA_VERSION + 1])
    with pytest.raises(StoreError, match="schema version"):
        open_store(store_url)


def test_transcripts_are_compressed_deduplicated_and_redacted(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalctl.chat import CompletionResponse
    from evalctl.results.models import TurnRecord

    secret = "sk-ant-api03-" + "x" * 40
    monkeypatch.setenv("ANTHROPIC_API_KEY", secret)
    runs = []
    for i in range(2):
        case = _case("shop/steady", True, i)
        case.transcript = [TurnRecord(turn=1, reply=CompletionResponse(content=f"key {secret}"))]
        runs.append(factories.run([case], run_id=f"t{i}"))
        runs[-1].started_at = f"2026-02-0{i + 1}T00:00:00+00:00"
    with open_store(store_url) as store:
        for run in runs:
            record_run(store, run, Provenance())
        assert store.query("SELECT COUNT(*) FROM blobs")[0][0] == 1
        detail = queries.get_run(store, "t1")
        assert detail is not None
        transcript = detail.cases[0].transcript
        assert transcript is not None
        text = json.dumps(transcript.model_dump())
        assert "key " in text
        assert secret not in text


def test_every_results_version_evalctl_reads_is_imported(store_url: str, tmp_path: Path) -> None:
    from evalctl.history.imports import import_paths

    old = sorted((REPO / "tests" / "data" / "old").glob("results-v*.json"))
    assert len(old) >= 3
    with open_store(store_url) as store:
        done = import_paths(store, old, Provenance())
        assert len(done) == len(old)
        assert all(d.cases > 0 for d in done)
        for d in done:
            detail = queries.get_run(store, d.key)
            assert detail is not None
            assert len(detail.cases) == d.cases


def test_import_reads_a_file_as_the_general_reader_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`history import` validates a current file from its bytes, conversations left as JSON;
    what it gets is what the general reader gets, and an older file goes that way."""
    from evalctl.chat import CompletionResponse, Message
    from evalctl.history import imports
    from evalctl.results.models import ToolCallRecord, TurnRecord

    run = scenario_run(3)
    case = run.cases[0]
    case.transcript = [
        TurnRecord(turn=1, sent=[Message.user("é?")], reply=CompletionResponse(content="ok"))
    ]
    case.tool_calls = [
        ToolCallRecord(turn=1, name="lookup", arguments={"q": "x"}, result="r", duration_ms=1.0)
    ]
    case.output = "ok"
    path = write_run(run, tmp_path / "run")
    assert imports._read_fast(path.read_bytes()) is not None
    fast_run, fast_talks = imports.read_for_import(path)
    monkeypatch.setattr(imports, "_read_fast", lambda raw: None)
    run_read, talks = imports.read_for_import(path)
    assert fast_talks == talks
    assert fast_talks[0].output == "ok" and fast_talks[0].transcript[0]["turn"] == 1
    assert fast_run == run_read
    assert [type(c) for c in fast_run.cases] == [CaseResult] * len(run.cases)
    assert [c.model_fields_set for c in fast_run.cases] == [
        c.model_fields_set for c in run_read.cases
    ]
    old = sorted((REPO / "tests" / "data" / "old").glob("results-v*.json"))
    assert old and all(imports._read_fast(p.read_bytes()) is None for p in old)


def test_the_store_file_is_0600(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "history.sqlite"
    with open_store(f"sqlite:///{path}") as store:
        record_run(store, scenario_run(0), Provenance())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            assert stat.S_IMODE(side.stat().st_mode) == 0o600


def test_a_password_in_the_store_url_is_never_printed(
    capsys: pytest.CaptureFixture[str], postgres_server: object
) -> None:
    url = "postgresql://evalctl:hunter2secret@127.0.0.1:1/nowhere"
    done = run_cli(capsys, "history", "list", "--store", url)
    assert done.code == 3
    assert "hunter2secret" not in done.out + done.err
    assert "evalctl:***@127.0.0.1:1" in done.err
    as_json = run_cli(capsys, "history", "list", "--store", url, "--json")
    assert "hunter2secret" not in as_json.out + as_json.err


def test_history_commands_refuse_bad_input(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(capsys, "history", "case", "no-slash", "--store", store_url).code == 2
    missing = run_cli(capsys, "history", "case", "shop/none", "--store", store_url)
    assert missing.code == 2
    assert "shop/none" in missing.err
    bad = run_cli(capsys, "history", "list", "--since", "yesterday", "--store", store_url)
    assert bad.code == 2
    assert "--since" in bad.err
    assert run_cli(capsys, "history", "prune", "--store", store_url).code == 2
    off = run_cli(capsys, "history", "list", "--no-store")
    assert off.code == 2


def test_sqlite_urls(tmp_path: Path) -> None:
    with open_store(f"sqlite:///{tmp_path / 'a.db'}") as store:
        assert store.dialect.name == "sqlite"
    assert (tmp_path / "a.db").is_file()
    assert sqlite3.connect(tmp_path / "a.db").execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_postgresql_store_without_its_driver_names_the_extra(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if not installed
    done = run_cli(capsys, "history", "list", "--store", "postgresql://u:pw@127.0.0.1:1/x")
    assert done.code == 2
    assert "evalctl[postgres]" in done.err
    assert "pw@" not in done.err


def test_a_resumed_run_replaces_its_interrupted_record(store_url: str) -> None:
    full = scenario_run(5)
    partial = full.model_copy(update={"cases": full.cases[:2], "interrupted": True})
    with open_store(store_url) as store:
        record_run(store, partial, Provenance())
        assert [r.interrupted for r in queries.list_runs(store)] == [True]
        record_run(store, full, Provenance())
        runs = queries.list_runs(store)
        assert [(r.interrupted, r.total) for r in runs] == [(False, 4)]
        history = queries.case_history(store, "shop", "breaks")
        assert history is not None
        assert len(history.runs) == 1
