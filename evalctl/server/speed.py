"""The speeds the daemon measured: generation and prompt evaluation, in tokens per second.

The client sizes a case's time limit from them (evalctl.runner.timelimit), so a machine
five times slower than the one a suite was written on gets five times the time instead of
timeouts. The first figures come from the warm-up request at load; each request after it
adds its own, and the median of the recent ones is reported, so one request that waited on
a busy core does not swing the estimate.
"""

from __future__ import annotations

import statistics
import threading
from collections import deque

WINDOW = 32
# Below this many evaluated prompt tokens a request's prompt time is mostly overhead, and
# says little about prompt throughput.
MIN_PROMPT_TOKENS = 16


class SpeedMeter:
    def __init__(self, window: int = WINDOW) -> None:
        self._lock = threading.Lock()
        self._gen: deque[float] = deque(maxlen=window)
        self._prompt: deque[float] = deque(maxlen=window)

    def add(
        self,
        *,
        generated: int,
        gen_seconds: float,
        prompt_tokens: int,
        prompt_seconds: float,
    ) -> None:
        """One request: `generated` tokens after the first in `gen_seconds`, and
        `prompt_tokens` evaluated (the uncached ones) in `prompt_seconds`."""
        with self._lock:
            if generated > 0 and gen_seconds > 0:
                self._gen.append(generated / gen_seconds)
            if prompt_tokens >= MIN_PROMPT_TOKENS and prompt_seconds > 0:
                self._prompt.append(prompt_tokens / prompt_seconds)

    @property
    def gen_tokens_per_s(self) -> float:
        """Median over recent requests; 0 when nothing was measured yet."""
        with self._lock:
            return statistics.median(self._gen) if self._gen else 0.0

    @property
    def prompt_tokens_per_s(self) -> float:
        with self._lock:
            return statistics.median(self._prompt) if self._prompt else 0.0
