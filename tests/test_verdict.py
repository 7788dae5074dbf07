"""The whole rule of a case's status (evalctl.scoring.verdict): weights, threshold, n/a, the
error override and folding repeats."""

from __future__ import annotations

from evalctl.results.models import CheckResult, CheckStatus
from evalctl.scoring.verdict import attempt_verdict, fold_repeats, weighted_status


def check(
    name: str, status: CheckStatus, weight: float | None = None, message: str = ""
) -> CheckResult:
    return CheckResult(name=name, status=status, weight=weight, message=message)


def test_every_check_must_pass_by_default() -> None:
    assert weighted_status([check("a", "pass"), check("b", "pass")]) == "pass"
    assert weighted_status([check("a", "pass"), check("b", "fail")]) == "fail"


def test_threshold_is_a_share_of_the_weight() -> None:
    checks = [check("a", "pass", weight=3), check("b", "fail")]
    assert weighted_status(checks, threshold=0.75) == "pass"  # 3 of 4
    assert weighted_status(checks, threshold=0.8) == "fail"
    # Three thirds that all pass reach a threshold of 1 despite rounding.
    thirds = [check(n, "pass", weight=1 / 3) for n in "abc"]
    assert weighted_status(thirds) == "pass"


def test_na_is_left_out_and_never_passes_a_case_alone() -> None:
    assert weighted_status([check("a", "pass"), check("b", "n/a")]) == "pass"
    assert weighted_status([check("a", "n/a")]) == "fail"
    assert weighted_status([]) == "fail"
    # n/a weight does not dilute the share.
    assert weighted_status([check("a", "pass"), check("b", "n/a", weight=9)], 1.0) == "pass"


def test_a_check_in_error_makes_the_attempt_error_naming_it() -> None:
    verdict = attempt_verdict(
        [check("a", "pass"), check("judge", "error", message="the judge failed")]
    )
    assert verdict.status == "error"
    assert verdict.error == "check 'judge': the judge failed"
    ok = attempt_verdict([check("a", "pass")])
    assert (ok.status, ok.error) == ("pass", None)


def test_repeats_fold() -> None:
    assert fold_repeats(["pass", "pass"]) == "pass"
    assert fold_repeats(["fail", "fail"]) == "fail"
    assert fold_repeats(["pass", "fail", "pass"]) == "flaky"
    assert fold_repeats(["pass", "error", "fail"]) == "error"  # any error: unscored
    assert fold_repeats(["fail"]) == "fail"
