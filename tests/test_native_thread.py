"""Every llama.cpp call of an engine runs on the engine's one thread
(evalctl.server.native_thread): called from many threads, llama.cpp's OpenMP workers stop
spinning and generation loses a third of its speed. The unit tests need no model; the last
one watches a real engine serve requests made from two threads."""

from __future__ import annotations

import threading

import pytest

from evalctl.chat import CompletionRequest, Message
from evalctl.server.engine import Engine, EngineConfig
from evalctl.server.native_thread import NativeThread
from tests.local_helpers import THREADS, embedded_model


def test_calls_from_any_thread_run_on_the_one_thread_and_return_its_value() -> None:
    native = NativeThread("test-native")
    seen: list[int] = []
    callers = [threading.Thread(target=lambda: seen.append(native.run(threading.get_ident)))]
    callers.append(threading.Thread(target=lambda: seen.append(native.run(threading.get_ident))))
    for caller in callers:
        caller.start()
        caller.join()
    seen.append(native.run(threading.get_ident))
    assert len(set(seen)) == 1
    assert seen[0] not in {threading.get_ident(), *(c.ident for c in callers)}
    native.stop()


def test_an_exception_reaches_the_caller_and_a_call_from_the_thread_runs_at_once() -> None:
    native = NativeThread("test-native")

    def fails() -> None:
        raise ValueError("bad request")

    with pytest.raises(ValueError, match="bad request"):
        native.run(fails)
    # Re-entrant: a job that runs another (a warm-up that completes a request) does not wait
    # on itself.
    assert native.run(lambda: native.run(lambda: 42)) == 42
    native.stop()
    # After the stop a call is refused at once, never left waiting behind it.
    with pytest.raises(RuntimeError, match="closed"):
        native.run(lambda: 1)


@pytest.mark.model
def test_an_engine_generates_on_one_thread_whichever_thread_asks() -> None:
    model = embedded_model()
    engine = Engine(EngineConfig(model.path, model.name, n_threads=THREADS))
    engine.load()
    generating: set[int] = set()
    request = CompletionRequest(messages=[Message.user("Say hi.")], max_tokens=4)

    def ask() -> None:
        # Deltas are sent from inside generation: they say which thread generates.
        engine.complete(request, on_delta=lambda _piece: generating.add(threading.get_ident()))

    try:
        ask()
        other = threading.Thread(target=ask)
        other.start()
        other.join()
        assert len(generating) == 1
        assert generating.isdisjoint({threading.get_ident(), other.ident})
    finally:
        engine.close()


@pytest.mark.model
def test_closing_an_engine_twice_is_harmless_and_a_closed_engine_refuses_work() -> None:
    model = embedded_model()
    engine = Engine(EngineConfig(model.path, model.name, n_threads=THREADS))
    engine.load()
    assert engine.close() and engine.close()
    with pytest.raises(RuntimeError):
        engine.load()
