"""The statistics of the baseline gate: is a drop in pass rate more than sampling noise?

Pure functions on counts, no I/O and no model. A *stratum* is one case (or one check of a
case): the baseline measured it `n` times with `a` passes, the run `m` times with `b`
passes. The null hypothesis for a stratum is "nothing changed": the baseline's samples and
the run's are independent draws with one pass probability, whatever it is. Every test here
is *conditional* on each stratum's total passes `t = a + b`: given `t`, each of the
C(n+m, t) ways to place the passes among the n+m samples is equally likely under the null
whatever the pass probability, so the run's passes `b` follow the hypergeometric law
P(b = k) = C(m, k)·C(n, t-k) / C(n+m, t). The nuisance parameter is gone, and every
p-value below is exact for every true pass probability (discrete, so conservative: P(p <=
x) <= x). Strata with t = 0 or t = n+m (all failed or all passed, on both sides) carry no
information: only one arrangement exists, and they are left out of every test.

Three tests, one verdict (`gate`):

* **per stratum**: Fisher's exact test, one-sided ("the run's pass rate is lower"): p =
  P(B <= b). Holm's step-down across the informative strata of the suite (FWER).
* **suite, stratified McNemar**: S = the run's passes summed over the informative strata;
  its exact null is the convolution of the strata's hypergeometrics (the exact conditional
  Cochran-Mantel-Haenszel test); p = P(S <= s). With one baseline sample and one run
  sample per case the informative strata are exactly the discordant pairs, each with
  P(b = 1) = 1/2, and the test *is* McNemar's exact test.
* **suite, clean-baseline flips**: the strata that are informative about a real drop are
  the ones the baseline never saw fail. A stratum with f >= 1 failures in all, f <= m, is
  eligible; it *flips* when all f failures fell in the run (the baseline passed every
  sample), which the null gives probability C(m, f)/C(n+m, f) (1/(K+1) for K baseline
  samples and one run sample). Each flip weighs log2 of the odds against it, rounded
  (all weigh the same with one run sample, so the statistic is then the count of flips);
  the weighed sum's exact null is built by dynamic programming; p = P(sum >= observed).
  This test has the power the stratified one lacks when unstable cases add noise: a
  stable case that now fails moves its sum by at most one pass among many noisy ones, but
  it is an event of probability 1/(K+1) here.

alpha is split between the three (Bonferroni: the verdict's false-alarm rate is at most the
sum of the shares): 1/2 to the per-stratum family, 1/8 to the stratified test, 3/8 to the
flip count, which has the power for the regression that matters most (stable cases that
break). A share that cannot be used is passed on: given the strata's totals (all the tests
condition on them) the smallest p-value each test can reach is known before the run's
outcomes are looked at, and a test whose smallest attainable p-value is above its share can
never fire. Its share goes to the others, pro rata. With one run sample per case the
per-case family cannot fire unless K is huge (its best p-value, 1/(K+1), would have to be
below alpha/2 over the number of informative strata), so the suite tests get alpha/4 and
3·alpha/4. The split depends only on the totals, so conditional on them the false-alarm
rate is still at most the sum of the shares, alpha; hence unconditionally too.

When a suite test fires, every stratum whose rate dropped is reported a regression: the
suite's evidence is collective and no single case can be singled out, so all candidates are
named.

Checks (`gate_checks`): the checks of one case are not independent, which both suite tests
above assume of their strata, so checks get the per-stratum family (Holm needs no
independence) and `check_flips`, a flip test with each case's checks as one unit, half of
alpha each. docs/gating.md has the measured calibration and power.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from types import MappingProxyType
from typing import Literal

Change = Literal["regression", "within_noise", "unchanged", "improvement"]
# Which evidence made a stratum a regression.
Cause = Literal["case", "suite"]

CASES = "cases"
STRATIFIED = "stratified_mcnemar"
FLIPS = "clean_baseline_flips"
CHECK_FLIPS = "clean_baseline_check_flips"
# Bonferroni weights of the components: `gate` uses the first three, `gate_checks` the
# per-stratum family and CHECK_FLIPS; each splits alpha pro rata among those it uses.
WEIGHTS: Mapping[str, float] = MappingProxyType(
    {CASES: 0.5, STRATIFIED: 0.125, FLIPS: 0.375, CHECK_FLIPS: 0.5}
)


@dataclass(frozen=True)
class Stratum:
    """One case or check: `baseline_passes` of `baseline_n` samples, `run_passes` of `run_m`."""

    key: str
    baseline_n: int
    baseline_passes: int
    run_m: int
    run_passes: int

    def __post_init__(self) -> None:
        if self.baseline_n < 1 or self.run_m < 1:
            raise ValueError(f"{self.key}: need at least one sample on each side")
        if not 0 <= self.baseline_passes <= self.baseline_n:
            raise ValueError(
                f"{self.key}: baseline passes {self.baseline_passes}/{self.baseline_n}"
            )
        if not 0 <= self.run_passes <= self.run_m:
            raise ValueError(f"{self.key}: run passes {self.run_passes}/{self.run_m}")

    @property
    def samples(self) -> int:
        return self.baseline_n + self.run_m

    @property
    def passes(self) -> int:
        return self.baseline_passes + self.run_passes

    @property
    def informative(self) -> bool:
        """False when every sample on both sides agrees: one arrangement, no evidence."""
        return 0 < self.passes < self.samples

    @property
    def dropped(self) -> bool:
        """The run's pass rate is below the baseline's (cross-multiplied: exact)."""
        return self.run_passes * self.baseline_n < self.baseline_passes * self.run_m

    @property
    def rose(self) -> bool:
        return self.run_passes * self.baseline_n > self.baseline_passes * self.run_m


@lru_cache(maxsize=4096)
def _null(n: int, m: int, t: int) -> tuple[int, tuple[float, ...]]:
    """(lowest b, pmf of b from there): the run's passes given n, m and the total t."""
    low, high = max(0, t - n), min(m, t)
    total = math.comb(n + m, t)
    # Integer numerators over one integer denominator: each value is correctly rounded.
    return low, tuple(math.comb(m, k) * math.comb(n, t - k) / total for k in range(low, high + 1))


def _null_of(s: Stratum) -> tuple[int, tuple[float, ...]]:
    return _null(s.baseline_n, s.run_m, s.passes)


@lru_cache(maxsize=4096)
def _fisher_lower(n: int, m: int, t: int, b: int) -> float:
    low = max(0, t - n)
    tail = sum(math.comb(m, k) * math.comb(n, t - k) for k in range(low, b + 1))
    return tail / math.comb(n + m, t)


def drop_p_value(s: Stratum) -> float:
    """Fisher's exact one-sided p-value for "the run's rate is lower": P(B <= b | t).

    B is the run's passes under the null given the stratum's total passes t
    (hypergeometric). 1.0 for a stratum with no information (t = 0 or t = n+m).
    """
    return _fisher_lower(s.baseline_n, s.run_m, s.passes, s.run_passes)


def min_drop_p_value(s: Stratum) -> float:
    """The smallest p-value `drop_p_value` can give a stratum with these totals."""
    return _null_of(s)[1][0]


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (FWER under any dependence), in input order.

    Reject hypothesis i at level alpha exactly when its adjusted p-value is <= alpha.
    """
    count = len(p_values)
    adjusted = [1.0] * count
    running = 0.0
    for rank, i in enumerate(sorted(range(count), key=p_values.__getitem__)):
        running = max(running, min(1.0, (count - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted


@dataclass(frozen=True)
class SuiteTest:
    """One suite-level test: its statistic against the exact null, and its share of alpha."""

    name: str
    statistic: int
    expected: float  # the statistic's mean under the null, for the report
    p_value: float
    strata: int  # strata that entered the test
    min_p_value: float  # the smallest p-value these totals allow
    alpha: float = 0.0
    fired: bool = False


def stratified_mcnemar(strata: Sequence[Stratum]) -> SuiteTest:
    """The exact conditional stratified test of "the run passes less" (McNemar generalised).

    S = the run's passes summed over the informative strata; under the null, given every
    stratum's total, S is a sum of independent hypergeometrics whose exact distribution is
    their convolution (dynamic programming, in floating point). p = P(S <= observed). With
    n = m = 1 everywhere this is McNemar's exact one-sided test on the discordant pairs.
    """
    nulls = [(_null_of(s), s.run_passes) for s in strata if s.informative]
    # Shifted so each stratum's lowest possible count is 0.
    observed = sum(b - low for (low, _), b in nulls)
    return SuiteTest(
        name=STRATIFIED,
        statistic=sum(s.run_passes for s in strata if s.informative),
        expected=sum((low + k) * q for (low, pmf), _ in nulls for k, q in enumerate(pmf)),
        p_value=lower_tail([pmf for (_, pmf), _ in nulls], observed),
        strata=len(nulls),
        min_p_value=math.prod(pmf[0] for (_, pmf), _ in nulls),
    )


# A state of the dynamic programme below this probability is not carried: its mass is added
# to the tail instead, so a p-value can only come out larger (conservative), by at most this
# much per state dropped. It keeps the programme to the bulk of the distribution.
NEGLIGIBLE = 1e-20


def lower_tail(pmfs: Sequence[Sequence[float]], limit: int) -> float:
    """P(X_1 + ... + X_k <= limit) for independent X_i, X_i's pmf over 0, 1, ... in `pmfs`.

    Exact dynamic programming over the sum, in floating point, with two economies: sums
    above `limit` are never stored (every X_i >= 0, so they cannot come back), and states
    under `NEGLIGIBLE` at either end of the window are counted into the tail rather than
    carried (so the result errs high, never low, by at most 1e-20 a state).
    """
    if limit < 0:
        return 0.0
    dist = [1.0]
    offset = 0  # the sum that dist[0] stands for
    folded = 0.0
    for pmf in pmfs:
        size = min(len(dist) + len(pmf) - 1, limit + 1 - offset)
        dist = _convolve_truncated(dist + [0.0] * (size - len(dist)), pmf)
        start, end = 0, len(dist)
        while start < end and dist[start] < NEGLIGIBLE:
            start += 1
        while end > start and dist[end - 1] < NEGLIGIBLE:
            end -= 1
        if start or end < len(dist):
            folded += sum(dist[:start]) + sum(dist[end:])
            dist = dist[start:end]
            offset += start
        if not dist:
            break
    return min(1.0, folded + sum(dist))


def _convolve_truncated(dist: list[float], pmf: Sequence[float]) -> list[float]:
    """dist convolved with pmf, kept to len(dist) entries."""
    if len(pmf) == 2:  # one run sample: the common case, kept cheap
        stay, step = pmf
        return [dist[0] * stay] + [
            d * stay + e * step for d, e in zip(dist[1:], dist, strict=False)
        ]
    out = [0.0] * len(dist)
    for k, q in enumerate(pmf[: len(dist)]):
        if q:
            out[k:] = [o + q * d for o, d in zip(out[k:], dist, strict=False)]
    return out


def flip_probability(s: Stratum) -> float:
    """Null probability that all of the stratum's failures fell in the run: C(m,f)/C(n+m,f).

    0.0 when the stratum is not eligible (no failures, or more than the run has samples).
    """
    failures = s.samples - s.passes
    if not 1 <= failures <= s.run_m:
        return 0.0
    return math.comb(s.run_m, failures) / math.comb(s.samples, failures)


def flip_weight(probability: float) -> int:
    """A flip's weight: log2 of the odds against it, rounded, at least 1.

    With one run sample every flip weighs the same and the statistic is their count; with
    repeats, all three samples failing on a 3/3 case (probability 1/20, weight 4) says more
    than one of three failing (1/2, weight 1). Integer weights keep the null exact.
    """
    return max(1, round(-math.log2(probability)))


def clean_baseline_flips(strata: Sequence[Stratum]) -> SuiteTest:
    """Strata the baseline never saw fail that fail in the run, weighed; exact null.

    Eligible: strata with f >= 1 failures in all and f <= m. A flip: the baseline passed
    every sample (all f failures in the run), probability q = C(m,f)/C(n+m,f) under the
    null given the totals, independently across strata. The statistic is the flips' summed
    `flip_weight(q)`, known from the totals alone; its exact null distribution is built
    by dynamic programming over the eligible strata. p = P(statistic >= observed).
    """
    units = []
    for s in strata:
        q = flip_probability(s)
        if q > 0.0:
            units.append((s.baseline_passes == s.baseline_n, q, flip_weight(q)))
    return _weighed_flips(FLIPS, units)


def _weighed_flips(name: str, units: list[tuple[bool, float, int]]) -> SuiteTest:
    """The weighed flip sum's test from (flipped, null probability, weight) per unit."""
    observed = sum(w for flipped, _, w in units if flipped)
    # P(flip sum >= observed) is P(non-flip sum <= total - observed): a lower tail, the
    # upper one reflected, so a tiny p-value keeps its digits (no 1 - x).
    total = sum(w for _, _, w in units)
    non_flip = [[q] + [0.0] * (w - 1) + [1.0 - q] for _, q, w in units]
    return SuiteTest(
        name=name,
        statistic=observed,
        expected=sum(q * w for _, q, w in units),
        p_value=lower_tail(non_flip, total - observed) if observed else 1.0,
        strata=len(units),
        min_p_value=math.prod(q for _, q, _ in units) if units else 1.0,
    )


def check_flips(cases: Sequence[Sequence[Stratum]]) -> SuiteTest:
    """The clean-baseline flip test for checks, one unit per case (its checks together).

    The checks of one case are not independent, so each case, not each check, is a unit:
    it *flips* when any of its checks flips (baseline passed every sample of that check,
    the run failed some). Under the null, given the case's samples as a set (the run's
    samples a uniformly random subset of them), check c flips with probability exactly
    q_c = C(m,f_c)/C(n+m,f_c), whatever the dependence between checks; so the case flips
    with probability at most min(1, sum of q_c) (the union bound). Cases are independent,
    and a sum of independent indicators is stochastically below the same sum with larger
    probabilities, so the weighed flip sum's p-value computed from these bounds (as in
    `clean_baseline_flips`) is valid, conservative where the bound is loose.
    """
    units = []
    for checks in cases:
        bound = min(1.0, sum(flip_probability(c) for c in checks))
        if bound > 0.0:
            flipped = any(
                flip_probability(c) > 0.0 and c.baseline_passes == c.baseline_n for c in checks
            )
            units.append((flipped, bound, flip_weight(bound)))
    return _weighed_flips(CHECK_FLIPS, units)


def split_alpha(alpha: float, floors: dict[str, float]) -> dict[str, float]:
    """Each component's share of alpha: `WEIGHTS` pro rata, less the ones that cannot fire.

    `floors[name]` is the smallest share at which the component could fire at all, known
    from the strata's totals alone. A component whose floor is above its share gets 0.0
    and its share goes to the rest; repeated until every remaining one can use its share.
    The shares sum to alpha (unless none can fire) and depend on the totals only.

    One component is dropped at a time, the one furthest from usable (largest floor/share):
    its share, passed on, may make another usable that would have been dropped with it (two
    failing stable cases, each too weak for half of alpha, pass the flip test once the
    stratified test's share is theirs).
    """
    active = set(floors)
    while active:
        weight = sum(WEIGHTS[name] for name in active)
        shares = {name: alpha * WEIGHTS[name] / weight for name in active}
        unusable = [name for name in active if floors[name] > shares[name]]
        if not unusable:
            return {name: shares.get(name, 0.0) for name in floors}
        active.remove(max(sorted(unusable), key=lambda name: floors[name] / shares[name]))
    return dict.fromkeys(floors, 0.0)


@dataclass(frozen=True)
class CaseVerdict:
    """One stratum's outcome: its p-values and its class."""

    stratum: Stratum
    p_value: float  # Fisher's exact one-sided
    adjusted_p_value: float  # across the suite's informative strata (Holm)
    change: Change
    cause: Cause | None = None  # for a regression: which evidence made it one


@dataclass(frozen=True)
class SuiteVerdict:
    """The gate's verdict on one suite: every stratum classified, and the suite tests."""

    alpha: float
    case_alpha: float  # the per-stratum family's share of alpha (adjusted p <= it: significant)
    cases: tuple[CaseVerdict, ...]
    suite_tests: tuple[SuiteTest, ...]

    @property
    def suite_fired(self) -> bool:
        return any(test.fired for test in self.suite_tests)

    @property
    def regressions(self) -> tuple[CaseVerdict, ...]:
        return tuple(c for c in self.cases if c.change == "regression")

    @property
    def within_noise(self) -> tuple[CaseVerdict, ...]:
        return tuple(c for c in self.cases if c.change == "within_noise")

    @property
    def failed(self) -> bool:
        return bool(self.regressions)


def gate(strata: Sequence[Stratum], alpha: float = 0.05) -> SuiteVerdict:
    """Classify every stratum of one suite; the suite fails when any is a `regression`.

    `statistical` (default): a dropped stratum is a regression when its own exact test is
    significant after Holm's multiplicity control, or when a suite-level test fires; a drop that
    is neither is `within_noise` (listed, not gating). Under no true change the
    probability that anything is called a regression is at most `alpha` (the module
    docstring says why). For the checks of a suite's cases, which are not independent,
    `gate_checks` adds a suite test that respects that.

    The strict rule is not here: it reads statuses, not counts (`baselines.changes`), and
    `compare --gate strict` is the one place it lives.
    """
    _check_alpha(alpha)
    return _statistical(strata, alpha, (stratified_mcnemar(strata), clean_baseline_flips(strata)))


def gate_checks(cases: Sequence[Sequence[Stratum]], alpha: float = 0.05) -> SuiteVerdict:
    """Classify every check of one suite, given as the checks of each case.

    The per-check family (Fisher's exact test, Holm across all the checks: valid under any
    dependence) and `check_flips`, which treats each case's checks as one unit, share alpha
    as `gate`'s tests do. So a check that broke in many cases is caught with one run sample,
    where no single check can be significant. Under no true change the probability that
    any check is called a regression is at most `alpha`.
    """
    _check_alpha(alpha)
    strata = [check for checks in cases for check in checks]
    return _statistical(strata, alpha, (check_flips(cases),))


def _check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")


def _per_stratum(strata: Sequence[Stratum]) -> tuple[list[float], list[float], list[int]]:
    """Each stratum's p-value, its adjusted p-value, and the informative strata's indices."""
    p_values = [drop_p_value(s) for s in strata]
    family = [i for i, s in enumerate(strata) if s.informative]
    adjusted = [1.0] * len(strata)
    for i, q in zip(family, holm([p_values[i] for i in family]), strict=True):
        adjusted[i] = q
    return p_values, adjusted, family


def _statistical(
    strata: Sequence[Stratum],
    alpha: float,
    raw: tuple[SuiteTest, ...],
) -> SuiteVerdict:
    p_values, adjusted, family = _per_stratum(strata)
    floors = {CASES: _family_floor([min_drop_p_value(strata[i]) for i in family])}
    floors.update({test.name: test.min_p_value for test in raw})
    shares = split_alpha(alpha, floors)
    # A zero share never fires, even on a p-value that underflowed to 0.0.
    tests = tuple(
        replace(t, alpha=shares[t.name], fired=shares[t.name] > 0.0 and t.p_value <= shares[t.name])
        for t in raw
    )
    case_alpha = shares[CASES]
    suite_hit = any(test.fired for test in tests)
    verdicts = tuple(
        _classify(s, p, q, case_hit=case_alpha > 0.0 and q <= case_alpha, suite_hit=suite_hit)
        for s, p, q in zip(strata, p_values, adjusted, strict=True)
    )
    return SuiteVerdict(alpha, case_alpha, verdicts, tests)


def _family_floor(min_p_values: list[float]) -> float:
    """The smallest family share at which any stratum could be rejected, given the totals:
    Holm's first step needs some p <= share/N."""
    if not min_p_values:
        return math.inf
    return min(min_p_values) * len(min_p_values)


def _classify(
    s: Stratum,
    p_value: float,
    adjusted: float,
    *,
    case_hit: bool,
    suite_hit: bool,
    cause: Cause | None = None,
) -> CaseVerdict:
    if case_hit and s.dropped:
        return CaseVerdict(s, p_value, adjusted, "regression", cause or "case")
    if s.dropped:
        if suite_hit:
            return CaseVerdict(s, p_value, adjusted, "regression", "suite")
        return CaseVerdict(s, p_value, adjusted, "within_noise")
    if s.rose:
        return CaseVerdict(s, p_value, adjusted, "improvement")
    return CaseVerdict(s, p_value, adjusted, "unchanged")
