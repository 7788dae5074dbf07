"""The confirmation arithmetic (`evalctl.confirmstats`) at the top of the allowed ranges,
against the whole-table computation it replaced (tests/confirmstats_reference.py) where
that one finishes.

Issue 38: `--confirm 200` spent 76 s of arithmetic on 2 cases (a 5/5 baseline, one run
sample). Target: under a second of CPU time (the machine may be shared) for every allowed R
(docs/gating.md), a fresh process's caches empty. The old computation is timed only at
R = 20, where it still finishes quickly.

    python benchmarks/bench_confirm_arithmetic.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from evalctl import confirmstats  # noqa: E402
from evalctl.confirmstats import MAX_CONFIRM_SAMPLES, Outcome  # noqa: E402
from evalctl.userfiles import MAX_SAMPLES  # noqa: E402
from tests import confirmstats_reference as reference  # noqa: E402


def _clear() -> None:
    for cached in (confirmstats._p_value, confirmstats._statistic, confirmstats._tables):
        cached.cache_clear()


def _two_cases(k: int, m0: int, r: int) -> float:
    """Seconds for what `run --confirm R` and `compare` compute for two dropped cases: the
    plan's best attainable p-value and the gate's p-value of each."""
    _clear()
    start = time.process_time()
    for a, f, b in ((k, 0, 0), (max(k - 1, 1), 0, r // 3)):
        confirmstats.best_attainable(k, a, m0, f, r)
        confirmstats.p_value(Outcome(k, a, m0, f, r, b))
    return time.process_time() - start


def main() -> None:
    print(f"{'K':>5} {'m0':>4} {'R':>5}  seconds (two cases)")
    worst = 0.0
    for k, m0, r in (
        (5, 1, 200),
        (5, 0, MAX_CONFIRM_SAMPLES),
        (20, 1, MAX_CONFIRM_SAMPLES),
        (100, 5, MAX_CONFIRM_SAMPLES),
        (MAX_SAMPLES, 0, MAX_CONFIRM_SAMPLES),
        (40, 48, MAX_CONFIRM_SAMPLES),
    ):
        seconds = _two_cases(k, m0, r)
        worst = max(worst, seconds)
        print(f"{k:>5} {m0:>4} {r:>5}  {seconds:.3f}")
    start = time.process_time()
    reference.p_value(5, 5, 1, 0, 20, 0)
    old = time.process_time() - start
    _clear()
    start = time.process_time()
    confirmstats.p_value(Outcome(5, 5, 1, 0, 20, 0))
    new = time.process_time() - start
    print(f"K=5 m0=1 R=20, one p-value: old {old:.3f} s, new {new:.4f} s ({old / new:.0f}x)")
    print(f"ratio {worst:.2f}: worst CPU seconds at the range limits / the 1 s target (<= 1)")


if __name__ == "__main__":
    main()
