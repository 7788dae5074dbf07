"""The one retry policy every provider goes through: exponential backoff with full jitter,
honouring a server's retry-after, bounded in attempts and in total time."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from evalctl.errors import TransientProviderError

T = TypeVar("T")


@dataclass
class RetryPolicy:
    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    total_budget_s: float = 60.0
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=random.Random)

    def delay_for(self, attempt: int, error: TransientProviderError) -> float:
        """Delay before retry number `attempt` (1-based)."""
        if error.retry_after is not None:
            # The server said when: waiting less burns an attempt on a certain refusal. A
            # little jitter keeps concurrent workers from waking together; `call` gives up
            # if the wait does not fit the total budget.
            return error.retry_after + self.rng.uniform(0, self.base_delay_s / 4)
        ceiling = min(self.max_delay_s, self.base_delay_s * 2 ** (attempt - 1))
        return self.rng.uniform(0, ceiling)

    def call(
        self,
        fn: Callable[[], T],
        on_retry: Callable[[int, TransientProviderError, float], None] | None = None,
    ) -> T:
        """Run `fn`, retrying transient errors; the last error propagates when the bound is hit."""
        started = time.monotonic()
        attempt = 1
        while True:
            try:
                return fn()
            except TransientProviderError as exc:
                if attempt >= self.max_attempts:
                    raise
                delay = self.delay_for(attempt, exc)
                if time.monotonic() - started + delay > self.total_budget_s:
                    raise
                if on_retry is not None:
                    on_retry(attempt, exc, delay)
                self.sleep(delay)
                attempt += 1
