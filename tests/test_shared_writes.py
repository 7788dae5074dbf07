"""Two real processes writing one shared file at once lose nothing: the judge cache and a
run's journal each take a lock for every write (evalctl.flock). No timing: a barrier lines the
writers up, and the assertions are about what is in the files afterwards."""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.synchronize
from pathlib import Path

from evalctl.chat import Usage
from evalctl.judge.cache import CachedJudgement, JudgeCache, cache_key
from evalctl.runner.journal import Journal
from tests.factories import case

ROUNDS = 40


def _judge(
    home: Path, verdict: str, seen: Path, start: multiprocessing.synchronize.Barrier
) -> None:
    cache = JudgeCache(home)
    entry = CachedJudgement(
        verdict=verdict, reason=verdict, reply="{}", provider="p", model="m", usage=Usage()
    )
    start.wait()
    observed = {}
    for i in range(ROUNDS):
        key = cache_key("p", "m", "rubric", f"input {i}", "answer")
        cache.put(key, entry)
        got = cache.get(key)
        observed[key] = got.verdict if got else None
    seen.write_text(json.dumps(observed))


def _journal(path: Path, writer: str, start: multiprocessing.synchronize.Barrier) -> None:
    journal = Journal(path)
    start.wait()
    for i in range(ROUNDS):
        # Far longer than a file buffer, so an unlocked writer would split each line.
        journal.append(case(f"{writer}/c{i}", "error", error="x" * 70_000))


def _both(target: object, args: list[tuple[object, ...]]) -> None:
    # Spawned, not forked: a fork of a test process that has run threads may deadlock.
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Barrier(2)
    procs = [ctx.Process(target=target, args=(*a, start)) for a in args]  # type: ignore[arg-type]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]


def test_two_runs_judging_the_same_questions_keep_one_verdict_each(tmp_path: Path) -> None:
    home = tmp_path / "home"
    seen = [tmp_path / "a.json", tmp_path / "b.json"]
    _both(_judge, [(home, "pass", seen[0]), (home, "fail", seen[1])])
    cache = JudgeCache(home)
    stored = {}
    for i in range(ROUNDS):
        key = cache_key("p", "m", "rubric", f"input {i}", "answer")
        entry = cache.get(key)
        assert entry is not None, f"judgement {i} was lost"
        stored[key] = entry.verdict
    # Whichever writer came first, its verdict is the one both read back and the one kept:
    # a later writer never replaces a stored judgement under a reader.
    for path in seen:
        assert json.loads(path.read_text()) == stored


def test_two_writers_of_one_journal_keep_every_line_whole(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    _both(_journal, [(path, "a"), (path, "b")])
    keys = [c.key for c in Journal(path).read()]  # any torn line would be refused here
    assert sorted(keys) == sorted(f"{w}/c{i}" for w in "ab" for i in range(ROUNDS))


def test_repair_cuts_only_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = Journal(path)
    journal.append(case("s/one"))
    with path.open("ab") as fh:
        fh.write(b'{"key": "s/tw')
    journal.repair()
    journal.append(case("s/three"))
    assert [c.key for c in journal.read()] == ["s/one", "s/three"]
