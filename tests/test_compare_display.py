"""What `compare` prints in a CI log: long case ids stay whole and greppable at 80 columns,
and a judge's rubric is a one-line excerpt, not the whole text."""

from __future__ import annotations

import pytest

from evalctl.baselines.diff import compare_runs
from evalctl.baselines.gate import STRICT, compare_baseline
from evalctl.cli.compare_render import render_comparison, render_diff
from evalctl.cli.output import stdout
from evalctl.results.models import CheckResult
from tests import factories as f

LONG = "tickets/customer-support-refund-request-for-a-damaged-parcel-delivered-late-0042"
RUBRIC = (
    "The reply must apologise for the delay.\n"
    "It must offer a refund or a replacement, never both.\n"
    "It must not blame the courier, and it must quote the order number back.\n"
    "It must stay under 120 words and end with a question. SECRET-TAIL-OF-THE-RUBRIC"
)


@pytest.fixture
def ci_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stdout, "width", 80)


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def test_a_long_case_id_is_printed_whole_at_80_columns(
    ci_width: None, capsys: pytest.CaptureFixture[str]
) -> None:
    base = f.baseline({LONG: "pass", "tickets/b": "pass"})
    run = f.run([f.case(LONG, "fail", failed_checks=("polite",)), f.case("tickets/b")])
    render_comparison(compare_baseline(base, run, rule=STRICT))
    out = capsys.readouterr().out
    # Whole on a line of its own, in the regressions section as in the failure lines, and
    # the row's statuses still shown rather than squeezed out.
    assert _lines(out).count(LONG) == 2
    assert "baseline pass · now fail · failed checks polite" in out


def test_the_run_diff_keeps_long_ids_whole_too(
    ci_width: None, capsys: pytest.CaptureFixture[str]
) -> None:
    a = f.run([f.case(LONG, "pass")])
    b = f.run([f.case(LONG, "fail")])
    render_diff(compare_runs(a, b))
    out = capsys.readouterr().out
    assert LONG in _lines(out)
    assert "pass→fail" in out


def test_short_ids_still_get_a_table(ci_width: None, capsys: pytest.CaptureFixture[str]) -> None:
    base = f.baseline({"s/a": "pass"})
    render_comparison(compare_baseline(base, f.run([f.case("s/a", "fail")]), rule=STRICT))
    out = capsys.readouterr().out
    assert any("s/a" in line and "│" in line for line in _lines(out))


def test_a_judge_regression_prints_a_one_line_excerpt_of_its_rubric(
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = f.baseline({"s/a": "pass"})
    failed = f.case("s/a", "fail")
    failed.checks = [
        CheckResult(name="judge", passed=False, expected=RUBRIC, actual="Sorry! Refund?")
    ]
    render_comparison(compare_baseline(base, f.run([failed]), rule=STRICT))
    out = capsys.readouterr().out
    line = next(line for line in _lines(out) if line.startswith("  judge: expected"))
    assert "The reply must apologise for the delay. It must offer" in line
    assert "SECRET-TAIL-OF-THE-RUBRIC" not in out
    assert "never both" not in out.replace(line, "")  # no rubric line printed after it
    assert line.endswith("actual Sorry! Refund?")
