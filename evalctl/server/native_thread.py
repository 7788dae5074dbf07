"""The one thread that makes every llama.cpp call of an engine.

llama.cpp's CPU backend (built with OpenMP, as llama-cpp-python builds it) keeps a team of
worker threads per calling thread. The daemon loads the model on its main thread and served
each request on whichever gRPC worker thread took it, so the process held one idle team per
thread that had ever called in. libgomp then counts more threads than the machine has cores
and stops letting its workers spin between parallel regions: they sleep on a futex, and
every token pays for waking them. Measured on the 2-core machine with 2 threads: generation
from another thread than the one that loaded the model made 52-69 tok/s with ~50,000
voluntary context switches per 256 tokens, against 101-111 tok/s and none on the loading
thread; the daemon made 0.64-0.69 of in-process llama-cpp-python. Making every call from
one long-lived thread keeps a single team.

A daemon thread, so a generation still running when the daemon exits cannot hold the exit.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

T = TypeVar("T")

_Job = tuple[Callable[[], Any], "Future[Any]"]


class NativeThread:
    """Runs callables one at a time on one thread, returning (or raising) what they do."""

    def __init__(self, name: str) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        # Guards `_stopped` with the queue, so no job is ever queued behind the stop (its
        # caller would wait forever).
        self._guard = threading.Lock()
        self._stopped = False
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def run(self, fn: Callable[[], T]) -> T:
        """`fn()` on the thread; called from the thread itself, it runs at once (a warm-up
        that completes a request, say)."""
        if threading.current_thread() is self._thread:
            return fn()
        future: Future[T] = Future()
        with self._guard:
            if self._stopped:
                raise RuntimeError("the engine is closed")
            self._jobs.put((fn, future))
        return future.result()

    def stop(self) -> None:
        """End the thread once the jobs already queued have run; later calls raise."""
        with self._guard:
            if not self._stopped:
                self._stopped = True
                self._jobs.put(None)

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # the caller re-raises it on its own thread
                future.set_exception(exc)
