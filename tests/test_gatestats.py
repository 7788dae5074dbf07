"""The gate's statistics (evalctl.gatestats) against brute-force enumeration and known values.

The reference for every distribution here is the definition itself: under "nothing
changed", given a stratum's total passes, every placement of those passes among its samples
is equally likely. The tests enumerate placements (itertools.combinations) with exact
fractions, so they share no formula with the module.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalctl.gatestats import (
    CASES,
    CHECK_FLIPS,
    FLIPS,
    STRATIFIED,
    WEIGHTS,
    Stratum,
    SuiteVerdict,
    _statistical,
    check_flips,
    clean_baseline_flips,
    drop_p_value,
    flip_probability,
    flip_weight,
    gate,
    gate_checks,
    holm,
    lower_tail,
    split_alpha,
    stratified_mcnemar,
)


def placements(n: int, m: int, t: int) -> dict[int, Fraction]:
    """P(run passes = k | t) by counting which of the n+m samples hold the t passes."""
    counts: dict[int, int] = {}
    for chosen in itertools.combinations(range(n + m), t):
        k = sum(1 for i in chosen if i >= n)  # samples n.. belong to the run
        counts[k] = counts.get(k, 0) + 1
    total = sum(counts.values())
    return {k: Fraction(c, total) for k, c in counts.items()}


def stratum(a: int, n: int, b: int, m: int, key: str = "s") -> Stratum:
    return Stratum(key, baseline_n=n, baseline_passes=a, run_m=m, run_passes=b)


def outcomes(margins: list[tuple[int, int, int]]) -> Iterator[tuple[Fraction, list[Stratum]]]:
    """Every joint outcome of strata with fixed (n, m, t), with its null probability."""
    laws = [sorted(placements(n, m, t).items()) for n, m, t in margins]
    for combo in itertools.product(*laws):
        prob = math.prod((q for _, q in combo), start=Fraction(1))
        strata = [
            stratum(t - b, n, b, m, key=f"s{i}")
            for i, ((n, m, t), (b, _)) in enumerate(zip(margins, combo, strict=True))
        ]
        yield prob, strata


# --- the per-stratum test -------------------------------------------------------------


def test_fisher_known_values() -> None:
    # 10/10 in the baseline, the one run sample fails: the failure is equally likely to
    # sit on any of the 11 samples.
    assert drop_p_value(stratum(10, 10, 0, 1)) == pytest.approx(1 / 11, rel=1e-15)
    # 8/10 then 0/3: t = 8, all 8 passes in the baseline: C(10,8)/C(13,8) = 45/1287.
    assert drop_p_value(stratum(8, 10, 0, 3)) == pytest.approx(45 / 1287, rel=1e-15)
    assert drop_p_value(stratum(10, 10, 1, 1)) == 1.0  # nothing failed anywhere
    assert drop_p_value(stratum(0, 5, 0, 1)) == 1.0  # nothing passed anywhere


@pytest.mark.parametrize(("n", "m"), [(1, 1), (3, 1), (5, 2), (4, 3), (10, 1)])
def test_fisher_matches_enumeration_and_is_valid(n: int, m: int) -> None:
    for t in range(n + m + 1):
        law = placements(n, m, t)
        for b in law:
            exact = sum((q for k, q in law.items() if k <= b), start=Fraction(0))
            assert drop_p_value(stratum(t - b, n, b, m)) == pytest.approx(float(exact), rel=1e-12)
        # Valid: under the null, P(p <= x) <= x at every attainable x.
        for b in law:
            x = drop_p_value(stratum(t - b, n, b, m))
            hit = sum(
                (q for k, q in law.items() if drop_p_value(stratum(t - k, n, k, m)) <= x),
                start=Fraction(0),
            )
            assert float(hit) <= x * (1 + 1e-12)


# --- multiplicity ---------------------------------------------------------------------


def test_holm_adjusted_p_values() -> None:
    adjusted = holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])


# --- the suite tests ------------------------------------------------------------------


@pytest.mark.parametrize(("pass_to_fail", "fail_to_pass", "concordant"), [(5, 0, 40), (7, 2, 3)])
def test_stratified_test_is_mcnemar_exact_with_one_sample_each(
    pass_to_fail: int, fail_to_pass: int, concordant: int
) -> None:
    strata = (
        [stratum(1, 1, 0, 1)] * pass_to_fail
        + [stratum(0, 1, 1, 1)] * fail_to_pass
        + [stratum(1, 1, 1, 1), stratum(0, 1, 0, 1)] * concordant
    )
    d = pass_to_fail + fail_to_pass
    mcnemar = Fraction(sum(math.comb(d, k) for k in range(pass_to_fail, d + 1)), 2**d)
    test = stratified_mcnemar(strata)
    assert test.strata == d
    assert test.p_value == pytest.approx(float(mcnemar), rel=1e-12)
    # With K = 1 the flip count is the same test: a flip is a pass -> fail pair.
    assert clean_baseline_flips(strata).p_value == pytest.approx(float(mcnemar), rel=1e-12)


MARGINS = [(3, 1, 2), (5, 2, 5), (4, 1, 4), (2, 2, 3), (10, 1, 10)]  # (n, m, t)


def test_stratified_test_matches_enumeration() -> None:
    joint = list(outcomes(MARGINS))
    for _, strata in joint[:: max(1, len(joint) // 25)]:
        observed = sum(s.run_passes for s in strata)
        exact = sum(
            (q for q, other in joint if sum(s.run_passes for s in other) <= observed),
            start=Fraction(0),
        )
        assert stratified_mcnemar(strata).p_value == pytest.approx(float(exact), rel=1e-12)


def flip_score(strata: list[Stratum]) -> int:
    """Eligible strata (1 <= failures <= m) whose baseline passed every sample, weighed.

    The weight is log2 of the odds against the flip, from the enumerated law.
    """
    score = 0
    for s in strata:
        failures = s.samples - s.passes
        if 1 <= failures <= s.run_m and s.baseline_passes == s.baseline_n:
            q = placements(s.baseline_n, s.run_m, s.passes)[s.run_m - failures]
            score += max(1, round(-math.log2(q)))
    return score


def test_flip_score_matches_enumeration() -> None:
    joint = list(outcomes(MARGINS))
    scores = set()
    for _, strata in joint:
        test = clean_baseline_flips(strata)
        score = flip_score(strata)
        scores.add(score)
        exact = sum((q for q, other in joint if flip_score(other) >= score), start=Fraction(0))
        assert test.statistic == score
        assert test.p_value == pytest.approx(float(exact), rel=1e-12)
    # The margins give flips of unequal weight (1/21 weighs 4, 1/2 weighs 1).
    assert scores == set(range(11))


def test_flip_weights() -> None:
    assert flip_weight(1 / 11) == 3  # 10/10 then a failed run sample
    assert flip_weight(1 / 20) == 4  # 3/3 then 0/3
    assert flip_weight(1 / 2) == 1
    assert flip_weight(0.9) == 1  # never below one: every flip counts


@pytest.mark.parametrize("limit", [20, 90, 100, 130])
def test_lower_tail_is_exact_or_errs_high_by_a_hair(limit: int) -> None:
    # 200 fair coins: the sum is Binomial(200, 1/2), its tail known in closed form. Far in
    # the tail the programme drops negligible states into the tail: never below the truth.
    exact = float(Fraction(sum(math.comb(200, k) for k in range(limit + 1)), 2**200))
    p = lower_tail([(0.5, 0.5)] * 200, limit)
    assert exact <= p * (1 + 1e-12)
    assert p <= exact * (1 + 1e-12) + 1e-12
    # Three-valued steps, as with repeats: the same law as 400 coins.
    two_coins = [(0.25, 0.5, 0.25)] * 200
    exact2 = float(Fraction(sum(math.comb(400, k) for k in range(2 * limit + 1)), 2**400))
    assert lower_tail(two_coins, 2 * limit) == pytest.approx(exact2, rel=1e-9, abs=1e-12)


def test_flip_probability() -> None:
    assert flip_probability(stratum(5, 5, 0, 1)) == pytest.approx(1 / 6)
    # 10/10 then 1/3: two failures, both in the run's 3 samples out of 13: C(3,2)/C(13,2).
    assert flip_probability(stratum(10, 10, 1, 3)) == pytest.approx(3 / 78)
    assert flip_probability(stratum(4, 5, 0, 1)) == 0.0  # two failures, one run sample
    assert flip_probability(stratum(5, 5, 1, 1)) == 0.0  # no failure at all


# --- the split of alpha ---------------------------------------------------------------


def test_split_alpha_follows_the_weights_when_every_test_can_fire() -> None:
    shares = split_alpha(0.05, {CASES: 0.0, STRATIFIED: 0.0, FLIPS: 0.0})
    assert shares == pytest.approx({name: 0.05 * WEIGHTS[name] for name in shares})


def test_split_alpha_drops_one_unusable_test_at_a_time() -> None:
    # No test can use its share of the even split; dropping all three at once left two
    # failing stable cases (the flip test's floor 0.028) with no alpha at all. Passed on one
    # at a time, the per-case family's share makes the two suite tests usable.
    floors = {CASES: 0.04, STRATIFIED: 0.007, FLIPS: 0.028}
    shares = split_alpha(0.05, floors)
    assert shares[CASES] == 0.0
    assert shares[STRATIFIED] == pytest.approx(0.0125) and shares[FLIPS] == pytest.approx(0.0375)
    assert sum(shares.values()) == pytest.approx(0.05)


def test_split_alpha_passes_on_a_share_that_cannot_be_used() -> None:
    shares = split_alpha(0.05, {CASES: 0.5, STRATIFIED: 0.0, FLIPS: 0.0})
    assert shares[CASES] == 0.0
    assert sum(shares.values()) == pytest.approx(0.05)
    assert shares[FLIPS] / shares[STRATIFIED] == pytest.approx(WEIGHTS[FLIPS] / WEIGHTS[STRATIFIED])
    assert split_alpha(0.05, {CASES: 1.0}) == {CASES: 0.0}


# --- the verdict ----------------------------------------------------------------------


def test_no_change_is_unchanged_and_passes() -> None:
    strata = [stratum(5, 5, 1, 1, f"p{i}") for i in range(50)]
    strata += [stratum(0, 5, 0, 1, f"f{i}") for i in range(5)]
    verdict = gate(strata)
    assert not verdict.failed
    assert {c.change for c in verdict.cases} == {"unchanged"}
    assert all(test.statistic == 0 for test in verdict.suite_tests if test.name == FLIPS)


def test_one_flip_in_noise_is_listed_within_noise_not_gating() -> None:
    strata = [stratum(5, 5, 1, 1, f"p{i}") for i in range(100)]
    strata += [stratum(5, 5, 0, 1, "flipped"), stratum(3, 5, 0, 1, "unstable")]
    verdict = gate(strata)
    assert not verdict.failed
    noisy = {c.stratum.key: c for c in verdict.within_noise}
    assert set(noisy) == {"flipped", "unstable"}
    assert noisy["flipped"].p_value == pytest.approx(1 / 6)


def test_many_stable_flips_fire_the_suite_and_name_every_drop() -> None:
    strata = [stratum(5, 5, 1, 1, f"p{i}") for i in range(400)]
    strata += [stratum(5, 5, 0, 1, f"broken{i}") for i in range(10)]
    strata += [stratum(2, 5, 0, 1, "unstable-dropped"), stratum(2, 5, 1, 1, "unstable-rose")]
    verdict = gate(strata)
    assert verdict.failed
    assert verdict.suite_fired
    named = {c.stratum.key for c in verdict.regressions}
    assert named == {f"broken{i}" for i in range(10)} | {"unstable-dropped"}
    assert {c.cause for c in verdict.regressions} == {"suite"}
    assert next(c for c in verdict.cases if c.stratum.key == "unstable-rose").change == (
        "improvement"
    )
    # One run sample per case: the per-case family cannot fire, so the suite tests share all.
    assert verdict.case_alpha == 0.0
    assert sum(test.alpha for test in verdict.suite_tests) == pytest.approx(0.05)


def per_stratum(strata: list[Stratum], alpha: float = 0.05) -> SuiteVerdict:
    """The per-stratum family alone, with all of alpha: what `gate` runs beside its suite
    tests (Holm needs no independence between strata; the suite tests do)."""
    return _statistical(strata, alpha, ())


def test_a_case_significant_on_its_own_with_repeats() -> None:
    strata = [stratum(10, 10, 10, 10, f"p{i}") for i in range(200)]
    strata += [stratum(10, 10, 0, 10, "broken"), stratum(6, 10, 4, 10, "noisy")]
    verdict = per_stratum(strata)
    assert verdict.suite_tests == ()
    assert verdict.case_alpha == 0.05
    broken = next(c for c in verdict.cases if c.stratum.key == "broken")
    assert broken.change == "regression"
    assert broken.cause == "case"
    # 2 informative strata: Holm doubles the smaller p-value.
    assert broken.adjusted_p_value == pytest.approx(2 * broken.p_value)
    assert next(c for c in verdict.cases if c.stratum.key == "noisy").change == "within_noise"


# One run sample each (the suite tests hold all of alpha), and repeats (all three share it).
SINGLE = [(3, 1, 3), (3, 1, 3), (3, 1, 3), (3, 1, 2), (2, 2, 2), (2, 2, 3), (4, 1, 4)]
REPEATS = [(3, 3, 3), (4, 3, 4), (3, 1, 3), (2, 2, 2)]


@pytest.mark.parametrize(("margins", "alpha"), [(SINGLE, 0.05), (SINGLE, 0.3), (REPEATS, 0.3)])
def test_the_whole_gate_false_alarm_rate_is_at_most_alpha_by_enumeration(
    margins: list[tuple[int, int, int]], alpha: float
) -> None:
    """Exact: for fixed totals, the null probability of any regression, summed outright."""
    first = gate(next(outcomes(margins))[1], alpha)
    assert (first.case_alpha > 0) == (margins is REPEATS)
    false_alarm = sum(
        (q for q, strata in outcomes(margins) if gate(strata, alpha).failed),
        start=Fraction(0),
    )
    assert 0 < false_alarm <= alpha


@st.composite
def small_suites(draw: st.DrawFn) -> list[tuple[int, int, int]]:
    """Margins (n, m, t) of 2 to 5 strata, small enough to enumerate every outcome."""
    margins = []
    for _ in range(draw(st.integers(2, 5))):
        n = draw(st.integers(1, 6))
        m = draw(st.integers(1, 3))
        margins.append((n, m, draw(st.integers(0, n + m))))
    return margins


@settings(max_examples=40, deadline=None)
@given(
    margins=small_suites(),
    alpha=st.sampled_from([0.01, 0.05, 0.2, 0.5]),
)
def test_false_alarm_rate_at_most_alpha_for_any_totals(
    margins: list[tuple[int, int, int]], alpha: float
) -> None:
    false_alarm = sum(
        (q for q, strata in outcomes(margins) if gate(strata, alpha).failed),
        start=Fraction(0),
    )
    assert false_alarm <= alpha


# --- checks: dependent within a case ---------------------------------------------------

# Each case: its samples as vectors of check outcomes (1 pass), and how many are the run's.
# Under the null the run's samples are a uniformly random subset of the case's samples,
# whatever the dependence between its checks: perfectly correlated checks (A), checks that
# fail on different samples (B), three checks (C), two run samples (D).
DEPENDENT_CASES: list[tuple[list[tuple[int, ...]], int]] = [
    ([(1, 1), (1, 1), (1, 1), (0, 0)], 1),
    ([(1, 1), (1, 1), (0, 1), (1, 0)], 1),
    ([(1, 1, 1), (1, 0, 1), (1, 1, 1), (1, 1, 0)], 1),
    ([(1, 1), (0, 1), (1, 0), (1, 1)], 2),
]


def check_outcomes() -> Iterator[tuple[Fraction, list[list[Stratum]]]]:
    """Every equally likely placement of each case's run samples, as check strata."""
    per_case = []
    for index, (vectors, m) in enumerate(DEPENDENT_CASES):
        placements_ = []
        for run in itertools.combinations(range(len(vectors)), m):
            checks = []
            for c in range(len(vectors[0])):
                base = [v[c] for i, v in enumerate(vectors) if i not in run]
                ran = [vectors[i][c] for i in run]
                checks.append(Stratum(f"case{index}:check{c}", len(base), sum(base), m, sum(ran)))
            placements_.append(checks)
        per_case.append(placements_)
    for combo in itertools.product(*per_case):
        prob = math.prod((Fraction(1, len(p)) for p in per_case), start=Fraction(1))
        yield prob, list(combo)


def test_check_flips_is_valid_whatever_the_dependence_between_checks() -> None:
    joint = list(check_outcomes())
    p_values = [(q, check_flips(cases).p_value) for q, cases in joint]
    for _, x in p_values:
        hit = sum((q for q, p in p_values if p <= x), start=Fraction(0))
        assert float(hit) <= x * (1 + 1e-12)
    for alpha in (0.05, 0.3, 0.6):
        false_alarm = sum((q for q, cases in joint if gate_checks(cases, alpha).failed), start=0)
        assert false_alarm <= alpha
    assert sum((q for q, cases in joint if gate_checks(cases, 0.6).failed), start=0) > 0


def test_a_check_broken_in_many_cases_is_caught_with_one_run_sample() -> None:
    def case(i: int, format_passes: int) -> list[Stratum]:
        return [
            stratum(5, 5, 1, 1, f"c{i}:answer"),
            stratum(5, 5, format_passes, 1, f"c{i}:format"),
            stratum(3, 5, i % 2, 1, f"c{i}:tone"),  # unstable: noise, never a flip
        ]

    cases = [case(i, 0 if i < 10 else 1) for i in range(200)]
    verdict = gate_checks(cases)
    assert verdict.failed
    assert {t.name for t in verdict.suite_tests if t.fired} == {CHECK_FLIPS}
    named = {c.stratum.key for c in verdict.regressions}
    broken = {f"c{i}:format" for i in range(10)}
    # The suite's evidence is collective: every check that dropped is named, the noisy
    # tone checks that happened to fail included; no check that held is.
    assert broken <= named
    assert {key for key in named - broken if not key.endswith(":tone")} == set()
    assert all(c.stratum.dropped for c in verdict.regressions)
    # Checks one by one cannot tell: each is a 1-in-6 event.
    flat = [check for checks in cases for check in checks]
    assert not per_stratum(flat).failed
    # Nothing broken: nothing called.
    assert not gate_checks([case(i, 1) for i in range(200)]).failed


def test_an_empty_suite_passes() -> None:
    verdict = gate([])
    assert not verdict.failed
    assert not verdict.suite_fired
    assert verdict.case_alpha == 0.0


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="s: baseline passes 4/3"):
        stratum(4, 3, 0, 1)
    with pytest.raises(ValueError, match="at least one sample"):
        stratum(0, 0, 0, 1)
    with pytest.raises(ValueError, match="alpha"):
        gate([stratum(1, 1, 1, 1)], alpha=1.5)
