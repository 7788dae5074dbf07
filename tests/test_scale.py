"""Issue 41, large runs: the journal commits in groups and still keeps every finished case
through a SIGKILL; a run keeps `-j` requests in flight at the server. No timing assertions:
counts of lines, fsyncs and requests in flight (the speed lives in benchmarks/bench_scale.py).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from evalctl.fakes.llm_server import FakeLLMServer, RecordedRequest, Step
from evalctl.runner.journal import Journal
from tests.cli_helpers import run_cli
from tests.factories import case

REPO = Path(__file__).resolve().parent.parent

KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from evalctl.runner.journal import Journal
from tests.factories import case

# No fsync at all before the kill: a group that would never be due.
journal = Journal(Path(sys.argv[1]), sync_interval_s=3600, sync_every=10**9)
for i in range(int(sys.argv[2])):
    journal.append(case(f"s/c{i}"))
print("written", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_sigkilled_run_keeps_every_case_it_journaled(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(path), "250"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == -9, proc.stderr
    assert proc.stdout == "written\n"
    # Written before `append` returned, so the kernel has every line though none was synced.
    assert [c.key for c in Journal(path).read()] == [f"s/c{i}" for i in range(250)]


def test_lines_are_synced_in_groups_not_one_by_one(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    with Journal(path, sync_interval_s=3600, sync_every=100) as journal:
        for i in range(250):
            journal.append(case(f"s/c{i}"))
    # Two full groups, the rest on close (and close's own last sync): never one per line.
    assert 1 <= journal.syncs <= 4
    assert len(Journal(path).read()) == 250


def test_a_group_short_of_its_count_is_synced_after_the_interval(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl", sync_interval_s=0.01, sync_every=10**9)
    journal.append(case("s/one"))
    done = threading.Event()
    # Waits for the writer thread's count, however busy the machine; no time is asserted.
    for _ in range(6000):
        if journal.syncs >= 1:
            done.set()
            break
        threading.Event().wait(0.01)
    syncs_before_close = journal.syncs
    journal.close()
    assert done.is_set() and syncs_before_close >= 1


def test_a_closed_journal_can_take_more_lines(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = Journal(path)
    journal.append(case("s/a"))
    journal.close()
    journal.append(case("s/b"))
    journal.close()
    assert [c.key for c in Journal(path).read()] == ["s/a", "s/b"]


SUITE = """\
[suite]
name = "tickets"
kind = "assert"
cases_from = "tickets.csv"

[suite.case_template]
input = { prompt = "Classify: {{ ticket }}" }
[[suite.case_template.assert]]
type = "contains"
value = "ok"
"""


def test_a_run_keeps_j_requests_in_flight(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = 8
    rows = "".join(f"t{i},ticket {i}\n" for i in range(2 * jobs))
    (tmp_path / "tickets.csv").write_text("id,ticket\n" + rows)
    (tmp_path / "tickets.toml").write_text(SUITE)
    # The server answers no request until `jobs` of them are in flight at once: a harness
    # that keeps fewer in flight breaks the barrier, and its cases end in error.
    barrier = threading.Barrier(jobs, timeout=120)

    def respond(req: RecordedRequest) -> Step | None:
        barrier.wait()
        return None

    with FakeLLMServer(responder=respond) as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        result = run_cli(
            capsys,
            "run",
            "--provider",
            "openai",
            "--cases",
            str(tmp_path / "tickets.toml"),
            "-j",
            str(jobs),
            "--out",
            str(tmp_path / "out"),
            "--no-progress",
            "--no-store",
        )
        peak = server.peak_in_flight
        requests = len(server.requests)
    assert result.code == 0, result.out + result.err
    assert requests == 2 * jobs
    assert peak == jobs


TABLE_SUITE = """\
[suite]
name = "tickets"
kind = "assert"
cases_from = "tickets.csv"

[suite.case_template]
input = { prompt = "Classify: {{ ticket }}" }
[[suite.case_template.assert]]
type = "contains"
value = "{{ expected }}"
"""


@pytest.fixture
def sixty_cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # Every reply is "ok"; three rows expect something else, so three cases fail.
    rows = "".join(
        f"row{i:02d},ticket {i},{'nope' if i in (7, 21, 42) else 'ok'}\n" for i in range(60)
    )
    (tmp_path / "tickets.csv").write_text("id,ticket,expected\n" + rows)
    (tmp_path / "tickets.toml").write_text(TABLE_SUITE)
    return tmp_path / "tickets.toml"


def _run_sixty(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    suite: Path,
    *flags: str,
) -> str:
    with FakeLLMServer() as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        out = suite.parent / f"out{len(flags)}"
        result = run_cli(
            capsys, "run", "--provider", "openai", "--cases", str(suite), "-j", "4",
            "--out", str(out), "--no-progress", "--no-store", *flags,
        )  # fmt: skip
    assert result.code == 0, result.out + result.err
    return result.out


def test_a_large_run_lists_what_did_not_pass_and_counts_the_rest(
    sixty_cases: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _run_sixty(capsys, monkeypatch, sixty_cases)
    for failed in ("row07", "row21", "row42"):
        assert f"tickets/{failed}" in out
    assert "tickets/row00" not in out and "tickets/row59" not in out
    assert "not listed: 57 passing of 60 cases" in out
    assert "57/60 passed" in out  # the summary line stays


def test_verbose_lists_every_case(
    sixty_cases: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _run_sixty(capsys, monkeypatch, sixty_cases, "--verbose")
    assert all(f"tickets/row{i:02d}" in out for i in range(60))
    assert "not listed" not in out


def test_streamed_replies_leave_the_connection_open_for_the_next_request() -> None:
    from evalctl.chat import CompletionRequest, Message
    from evalctl.providers.openai import OpenAIProvider

    with FakeLLMServer() as server:
        provider = OpenAIProvider(model="m", api_key="k", base_url=f"{server.url}/v1", env={})
        try:
            replies = [
                provider.complete(
                    CompletionRequest(messages=[Message(role="user", content=f"q{i}")]),
                    timeout=60,
                ).content
                for i in range(10)
            ]
        finally:
            provider.close()
        streamed = [r.body.get("stream") for r in server.requests if isinstance(r.body, dict)]
        connections = server.connections
    assert replies == ["ok"] * 10 and streamed == [True] * 10
    # Read to the end of each body, so HTTP/1.1 keeps the one connection (the SDK's own
    # stream closed it at `[DONE]`: one connection per request).
    assert connections == 1


def test_ctrl_c_keeps_every_finished_case_in_the_journal_and_the_results(tmp_path: Path) -> None:
    import json
    import os
    import signal

    rows = "".join(f"t{i:02d},ticket {i}\n" for i in range(12))
    (tmp_path / "tickets.csv").write_text("id,ticket\n" + rows)
    (tmp_path / "tickets.toml").write_text(SUITE)
    release = threading.Event()

    def respond(req: RecordedRequest) -> Step | None:
        # Tickets 8 and on are held until the test is over: in flight when Ctrl-C comes. The
        # process must exit while they are held (their timeout is an hour): it once waited
        # for its threads' requests to end, its results long written.
        if int(req.first_user_text().rsplit(" ", 1)[-1]) >= 8:
            release.wait(300)
        return None

    out = tmp_path / "out"
    with FakeLLMServer(responder=respond) as server:
        env = {**os.environ, **server.env(), "PYTHONPATH": str(REPO), "NO_COLOR": "1"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "evalctl.cli", "run", "--provider", "openai", "--cases",
             str(tmp_path / "tickets.toml"), "-j", "4", "--out", str(out), "--no-progress",
             "--no-store", "--timeout", "3600"],
            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            journal = out / "journal.jsonl"
            for _ in range(12000):  # a guard against a hung child, not a timing check
                if journal.exists() and journal.read_bytes().count(b"\n") >= 8:
                    break
                if proc.poll() is not None:
                    break
                threading.Event().wait(0.01)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=300)
        finally:
            release.set()
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, err.decode()
    journaled = sorted(c.key for c in Journal(out / "journal.jsonl").read())
    assert journaled == [f"tickets/t{i:02d}" for i in range(8)]
    written = json.loads((out / "results.json").read_text())
    assert written["interrupted"] is True
    assert sorted(c["key"] for c in written["cases"]) == journaled
