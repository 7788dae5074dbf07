"""The degenerate-loop detector on token ids (no model)."""

from __future__ import annotations

import random

from evalctl.server.repetition import RepetitionDetector


def _first_trip(detector: RepetitionDetector, tokens: list[int]) -> int | None:
    for i, token in enumerate(tokens, start=1):
        if detector.push(token):
            return i
    return None


def test_a_long_period_loop_is_caught() -> None:
    # A 40-token line written over and over (a repeated line of Cyrillic text is about this).
    line = list(range(1000, 1040))
    tripped = _first_trip(RepetitionDetector(), line * 10)
    assert tripped is not None
    assert tripped <= 40 * 5


def test_varied_text_is_not_a_loop() -> None:
    rng = random.Random(7)
    assert _first_trip(RepetitionDetector(), [rng.randrange(50_000) for _ in range(2000)]) is None
