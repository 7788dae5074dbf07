"""The engine's parallel slots: one llama.cpp context each, handed to one request at a time.

A daemon started with `--parallel N` serves N requests at once. Each slot is a context of its
own on the one memory-mapped model, with its own KV cache and its own calling thread
(evalctl.server.native_thread), so a request decodes exactly as it would alone: llama.cpp's
kernels compute a row the same way whatever the thread count, and the logits of one context
at 1 thread and at 2 were measured bit-identical. Several sequences of one context
(`n_seq_max`) would batch their weights but not their attention, and on the 2-core machine
they made 1.0x the tokens per second of one sequence where two contexts of one thread each
made 1.15-1.45x (benchmarks/bench_parallel.py measures both in one run).

A request goes to the free slot whose cache shares the longest prefix with its prompt, as
llama.cpp's server picks a slot by prompt similarity, so a suite's cases keep reusing their
system prompt and tool list on whichever slot they land.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from evalctl.server.native_thread import NativeThread


@dataclass
class Slot:
    """One context and the thread that makes its llama.cpp calls."""

    index: int
    native: NativeThread
    llm: Any = None
    # The text this slot's KV cache was last filled from (a prompt and its reply): how a
    # request finds the slot that already holds most of its prompt.
    held: str = ""
    busy: bool = field(default=False, repr=False)


class SlotPool:
    """Hands out free slots; a request waits while every slot is busy."""

    def __init__(self, slots: list[Slot]) -> None:
        if not slots:
            raise ValueError("an engine needs at least one slot")
        self.slots = slots
        self._free = threading.Condition()

    def acquire(self, prompt: str = "", timeout: float | None = None) -> Slot | None:
        """The free slot whose held text shares the longest prefix with `prompt` (the
        lowest-numbered among equals), marked busy; None when none came free in `timeout`
        seconds (None: wait as long as it takes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._free:
            while True:
                free = [s for s in self.slots if not s.busy]
                if free:
                    best = max(free, key=lambda s: (_shared_chars(s.held, prompt), -s.index))
                    best.busy = True
                    return best
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._free.wait(left)

    def release(self, slot: Slot) -> None:
        with self._free:
            slot.busy = False
            self._free.notify()

    def acquire_all(self, timeout: float | None = None) -> bool:
        """Every slot, once each is free (closing or resetting the engine); False, holding
        none, when they were not all free within `timeout` (None: wait)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._free:
            while any(s.busy for s in self.slots):
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._free.wait(left)
            for slot in self.slots:
                slot.busy = True
            return True

    def release_all(self) -> None:
        with self._free:
            for slot in self.slots:
                slot.busy = False
            self._free.notify_all()


def _shared_chars(a: str, b: str) -> int:
    """How many leading characters two texts share (a binary search over slices, each
    comparison in C: prompts run to tens of thousands of characters)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low
