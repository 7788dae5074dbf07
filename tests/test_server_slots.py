"""Parallel slots: the pool's choice and waiting (no model), then an engine of two slots on the
real embedded model: two requests in flight at once, each reply as one slot writes it, and a
suite's shared prompt kept in the slot that holds it."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalctl.chat import CompletionRequest, Message
from evalctl.server.engine import Engine, EngineConfig
from evalctl.server.native_thread import NativeThread
from evalctl.server.options import DaemonOptions, parse_argv
from evalctl.server.slots import Slot, SlotPool
from tests.local_helpers import embedded_model


def _pool(n: int) -> SlotPool:
    return SlotPool([Slot(i, NativeThread(f"test-slot-{i}")) for i in range(n)])


def test_a_request_goes_to_the_free_slot_holding_its_prefix() -> None:
    pool = _pool(3)
    pool.slots[2].held = "SYSTEM: wine shop\nUSER: red?"
    pool.slots[1].held = "RELEASE NOTES for k9s"
    chosen = pool.acquire("SYSTEM: wine shop\nUSER: white?")
    assert chosen is pool.slots[2]
    # Busy now: the next request sharing that prefix takes the best free slot instead.
    again = pool.acquire("SYSTEM: wine shop\nUSER: rose?")
    assert again is pool.slots[0]


def test_a_request_waits_for_a_slot_and_gives_up_at_its_timeout() -> None:
    pool = _pool(1)
    held = pool.acquire("a")
    assert held is not None
    assert pool.acquire("a", timeout=0.05) is None
    got: list[Slot | None] = []
    waiter = threading.Thread(target=lambda: got.append(pool.acquire("b")))
    waiter.start()
    pool.release(held)
    waiter.join(timeout=10)
    assert got == [pool.slots[0]]


def test_acquire_all_waits_for_every_slot_or_holds_none() -> None:
    pool = _pool(2)
    busy = pool.acquire()
    assert busy is not None
    assert not pool.acquire_all(timeout=0.05)
    # Holding none after the failed attempt: the other slot is still free.
    other = pool.acquire(timeout=0)
    assert other is not None and other is not busy
    pool.release(busy)
    pool.release(other)
    assert pool.acquire_all(timeout=1)
    assert pool.acquire(timeout=0) is None
    pool.release_all()
    assert pool.acquire(timeout=0) is not None


def test_parallel_is_a_daemon_flag_both_sides_agree_on(tmp_path: Path) -> None:
    options = DaemonOptions(model_path=tmp_path / "m.gguf", socket_path=tmp_path / "s", parallel=3)
    assert parse_argv(options.to_argv()).parallel == 3
    with pytest.raises(SystemExit):
        parse_argv([*options.to_argv(), "--parallel", "0"])


# -- the real model -------------------------------------------------------------------------

QUESTIONS = ("Name a red grape.", "Name a white grape.", "What is a cork for?")
SYSTEM = "You are a sommelier. Answer in one short sentence."


def _request(question: str) -> CompletionRequest:
    return CompletionRequest(
        messages=[Message.system(SYSTEM), Message.user(question)],
        max_tokens=24,
        temperature=0.0,
        seed=0,
    )


@pytest.fixture(scope="module")
def engines() -> Iterator[tuple[Engine, Engine]]:
    model = embedded_model()
    one = Engine(EngineConfig(model.path, model.name, n_ctx=1024, n_threads=1))
    two = Engine(EngineConfig(model.path, model.name, n_ctx=1024, n_threads=1, parallel=2))
    one.load()
    two.load()
    yield one, two
    one.close()
    two.close()


def test_two_slots_serve_two_requests_at_once(engines: tuple[Engine, Engine]) -> None:
    _, two = engines
    first_streaming = threading.Event()
    release_first = threading.Event()

    def hold(_delta: str) -> None:
        # The first request stops at its first token until the second has finished: only
        # a second slot lets the second finish meanwhile.
        first_streaming.set()
        release_first.wait(timeout=120)

    results: list[str] = []
    first = threading.Thread(
        target=lambda: results.append(
            two.complete(_request(QUESTIONS[0]), on_delta=hold).response.content
        )
    )
    first.start()
    assert first_streaming.wait(timeout=120)
    second = two.complete(_request(QUESTIONS[1]))
    finished_while_first_held = not release_first.is_set()
    release_first.set()
    first.join(timeout=120)
    assert finished_while_first_held
    assert second.response.usage.output_tokens > 0
    assert results and results[0]


def test_each_slot_writes_what_one_slot_writes(engines: tuple[Engine, Engine]) -> None:
    one, two = engines
    alone = [one.complete(_request(q)).response.content for q in QUESTIONS]
    together: dict[int, str] = {}

    def ask(index: int) -> None:
        together[index] = two.complete(_request(QUESTIONS[index])).response.content

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(QUESTIONS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert [together[i] for i in range(len(QUESTIONS))] == alone


def test_a_shared_prompt_is_reused_from_the_slot_that_holds_it(
    engines: tuple[Engine, Engine],
) -> None:
    _, two = engines
    two.reset_cache()
    first = two.complete(_request(QUESTIONS[0])).response.usage
    assert first.cached_input_tokens == 0
    # Both slots are free again; the one holding the system prompt gets the next case.
    second = two.complete(_request(QUESTIONS[2])).response.usage
    assert second.cached_input_tokens > 0
    assert two.parallel == 2
