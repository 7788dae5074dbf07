"""Check statuses: pass, fail and n/a (nothing to test), and how they fold into a case and
a summary."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from evalctl.results.models import CheckResult, not_applicable
from evalctl.results.summary import summarize
from evalctl.scoring.verdict import weighted_status
from tests import factories as f


def test_status_and_passed_agree_whichever_is_given() -> None:
    assert CheckResult(name="a", passed=True).status == "pass"
    assert CheckResult(name="a", passed=False).status == "fail"
    na = not_applicable("a", "no rows to check")
    assert (na.status, na.passed, na.message) == ("n/a", False, "no rows to check")
    assert na.not_applicable and not na.failed
    assert CheckResult(name="a", status="pass").passed is True
    with pytest.raises(ValidationError, match="contradicts"):
        CheckResult(name="a", passed=True, status="fail")
    # A version 1 file has `passed` only.
    assert CheckResult.model_validate({"name": "a", "passed": True}).status == "pass"


def test_passed_is_derived_from_status_and_still_written() -> None:
    check = CheckResult(name="a", status="pass")
    check.status = "fail"  # one field: nothing else to keep in step
    assert check.passed is False
    written = check.model_dump(mode="json")
    assert written["passed"] is False and written["status"] == "fail"
    # What is written reads back (both keys present and agreeing).
    assert CheckResult.model_validate(written) == check
    assert (
        CheckResult.model_validate_json(CheckResult(name="b", passed=True).model_dump_json()).status
        == "pass"
    )


def test_na_neither_fails_nor_alone_passes_a_case() -> None:
    ok, bad = CheckResult(name="a", passed=True), CheckResult(name="b", passed=False)
    na = not_applicable("c", "nothing to test")
    assert weighted_status([ok, na]) == "pass"
    assert weighted_status([bad, na]) == "fail"
    assert weighted_status([na]) == "fail"  # nothing was verified
    assert weighted_status([]) == "fail"


def test_summary_counts_na_checks_apart() -> None:
    case = f.case("s/a", "pass").model_copy(
        update={
            "checks": [
                CheckResult(name="a", passed=True),
                not_applicable("b", "why"),
                not_applicable("c", "why"),
            ]
        }
    )
    summary = summarize([case, f.case("s/b", "fail", failed_checks=("x",))], "scripted")
    assert (summary.checks_passed, summary.checks_failed, summary.checks_na) == (1, 1, 2)
