"""One false-alarm budget for the whole exit code of `compare`.

`alpha` (default 0.05, `compare --alpha`) bounds the probability that `compare` exits 1 when
nothing changed, across every suite, both families (cases and checks), the suite metrics
and every matrix cell. It is split once, before any outcome is looked at (Bonferroni: the
exit code's false-alarm rate is at most the sum of the shares):

    cases    0.70 alpha   one family over every suite's statistically tested cases
    checks   0.20 alpha   one family over every statistically tested check
    metrics  0.10 alpha   shared by the opted-in metric gates (`[suite.gate]`)

A matrix divides alpha by its number of cells first. Cases compared exactly (answers that
cannot vary: the scripted provider, a case no model answers, a deterministic target) spend
none of it: the same input gives the same answer, so nothing changes by chance. A suite that
asks for the strict rule (`[suite] gate = "strict"`) is outside the budget: that rule gates
every pass -> fail whatever the noise, by the suite author's choice.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_ALPHA = 0.05
CASE_SHARE = 0.70
CHECK_SHARE = 0.20
METRIC_SHARE = 0.10


@dataclass(frozen=True)
class Budget:
    """The exit code's false-alarm budget and its shares."""

    alpha: float = DEFAULT_ALPHA

    @property
    def cases(self) -> float:
        return self.alpha * CASE_SHARE

    @property
    def checks(self) -> float:
        return self.alpha * CHECK_SHARE

    @property
    def metrics(self) -> float:
        return self.alpha * METRIC_SHARE

    def per_cell(self, cells: int) -> Budget:
        """Each matrix cell's budget: the cells share alpha equally."""
        return Budget(self.alpha / max(cells, 1))
