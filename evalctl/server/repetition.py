"""Detects a degenerate loop: the same n-gram of tokens repeating back to back.

A small model can get stuck writing one phrase over and over ("The command is a command to
… The command is a command to …"), even inside a grammar, until max_tokens. The detector
sees each generated token once and keeps, for every period p up to `max_period`, how many
consecutive tokens equalled the token p positions earlier. When the periodic tail (that
run plus one period) covers at least `min_span` tokens and `min_repeats` periods, the
output is looping and generation should end. O(max_period) per token, no re-scanning.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Loops seen on the embedded model have periods of 1-20 tokens in English; a repeated line of
# Russian text ran to ~40 (sommelier/ru-tuscany wrote one line until max_tokens with a
# bound of 32). A 64-token tail that is one n-gram repeated at least 4 times is not
# something a correct answer writes.
MAX_PERIOD = 128
MIN_SPAN = 64
MIN_REPEATS = 4


@dataclass
class RepetitionDetector:
    max_period: int = MAX_PERIOD
    min_span: int = MIN_SPAN
    min_repeats: int = MIN_REPEATS
    _tokens: list[int] = field(default_factory=list)
    _runs: list[int] = field(default_factory=list)
    # The period of the loop that tripped the detector (0: none yet).
    period: int = 0

    def __post_init__(self) -> None:
        self._runs = [0] * (self.max_period + 1)

    def push(self, token: int) -> bool:
        """Record one generated token; True once the output is a degenerate loop."""
        tokens = self._tokens
        tokens.append(token)
        n = len(tokens)
        for p in range(1, min(self.max_period, n - 1) + 1):
            if tokens[-1] == tokens[-1 - p]:
                self._runs[p] += 1
                span = self._runs[p] + p
                if span >= self.min_span and span >= self.min_repeats * p:
                    self.period = p
                    return True
            else:
                self._runs[p] = 0
        return False
