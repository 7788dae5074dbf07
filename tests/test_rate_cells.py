"""A sampled baseline or run is shown by its pass rate, `2/5` in the colour of the rate, not by
a pass/fail badge: in the HTML report, the Markdown job summary and the terminal."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from evalctl.baselines.comparison import CheckChange, Comparison
from evalctl.baselines.diff import compare_runs
from evalctl.baselines.gate import STRICT, compare_baseline
from evalctl.baselines.model import Baseline, PassCount
from evalctl.cli import compare_render
from evalctl.reports.comparison_markdown import comparison_markdown
from evalctl.reports.kit.card import STATUS_COLOURS
from evalctl.reports.kit.elements import XHTML_NS
from evalctl.reports.run_page import case_badge, run_page
from evalctl.results.models import Attempt, CaseResult, CaseStatus, CheckResult, RunResult
from evalctl.results.text import STATUS_STYLE, rate_tone
from tests import factories as f

H = f"{{{XHTML_NS}}}"


def _status(passed: int, runs: int) -> CaseStatus:
    return "pass" if passed == runs else "fail" if passed == 0 else "flaky"


def _ran(
    key: str, passed: int, runs: int, checks: dict[str, CheckResult] | None = None
) -> CaseResult:
    return f.case(key, _status(passed, runs)).model_copy(
        update={
            "attempts": [
                Attempt(status="pass" if i < passed else "fail", latency_ms=10.0)
                for i in range(runs)
            ],
            "checks": list((checks or {}).values()),
        }
    )


def check_within_noise() -> tuple[RunResult, Comparison]:
    """The issue's case: a check that passed 2 of its 5 baseline samples fails the run's one."""
    baseline = Baseline(
        provider="scripted",
        model="script",
        baselines={"s/a": "fail"},
        pass_counts={"s/a": PassCount(passed=0, runs=5)},
        checks={"s/a": {"format": "fail", "content": "fail"}},
        check_counts={
            "s/a": {
                "format": PassCount(passed=2, runs=5),
                "content": PassCount(passed=0, runs=5),
            }
        },
    )
    checks = {n: CheckResult(name=n, status="fail") for n in ("format", "content")}
    run = f.run([_ran("s/a", 0, 1, checks)])
    return run, compare_baseline(baseline, run)


def flaky_improvement() -> tuple[RunResult, Comparison]:
    baseline = Baseline(
        provider="scripted",
        model="script",
        baselines={"s/a": "flaky"},
        pass_counts={"s/a": PassCount(passed=2, runs=10)},
    )
    run = f.run([_ran("s/a", 10, 10)])
    return run, compare_baseline(baseline, run, rule=STRICT)


def test_the_colour_of_a_rate() -> None:
    assert [rate_tone(p, n) for p, n in ((5, 5), (1, 1), (2, 5), (0, 1), (0, 5))] == [
        "pass",
        "pass",
        "flaky",
        "fail",
        "fail",
    ]
    assert rate_tone(0, 0) == "skipped"


def test_the_examples_are_the_entries_the_cells_are_drawn_for() -> None:
    (noise,) = check_within_noise()[1].check_within_noise
    assert (noise.check, noise.baseline, noise.current) == ("format", "fail", "fail")
    (better,) = flaky_improvement()[1].improvements
    assert (better.baseline, better.current) == ("flaky", "pass")


def _section_rows(page: str, title: str) -> list[list[ET.Element]]:
    root = ET.fromstring(page.encode("utf-8"))
    section = root.find(f".//{H}section[@id='baseline']")
    assert section is not None
    for block in section.iter(f"{H}div"):
        if block.findtext(f"{H}h3") == title:
            return [list(tr) for tr in block.iter(f"{H}tr") if tr.find(f"{H}td") is not None]
    raise AssertionError(f"no section {title!r}")


def _span(td: ET.Element) -> tuple[str, str, str]:
    (span,) = list(td)
    return span.text or "", span.get("class") or "", span.get("style") or ""


def test_html_shows_rates_coloured_by_the_rate() -> None:
    run, cmp = check_within_noise()
    (row,) = _section_rows(run_page(run, cmp), "Check changes, within noise (not gating)")
    # case, check, baseline, now, ...
    assert _span(row[2]) == ("2/5", "badge rate", f"background: {STATUS_COLOURS['flaky']}")
    assert _span(row[3]) == ("0/1", "badge rate", f"background: {STATUS_COLOURS['fail']}")
    assert "95% CI" in (row[2][0].get("title") or "")

    run, cmp = flaky_improvement()
    (row,) = _section_rows(run_page(run, cmp), "Improvements")
    assert _span(row[1]) == ("2/10", "badge rate", f"background: {STATUS_COLOURS['flaky']}")
    assert _span(row[2]) == ("10/10", "badge rate", f"background: {STATUS_COLOURS['pass']}")


def test_html_keeps_the_badge_where_there_is_no_rate() -> None:
    baseline = f.baseline({"s/a": "pass"})
    run = f.run([f.case("s/a", "fail")])
    (row,) = _section_rows(
        run_page(run, compare_baseline(baseline, run, rule=STRICT)), "Regressions"
    )
    assert _span(row[1]) == ("pass", "badge", f"background: {STATUS_COLOURS['pass']}")
    assert _span(row[2]) == ("fail", "badge", f"background: {STATUS_COLOURS['fail']}")


def test_markdown_shows_rates_behind_the_icon_of_the_rate() -> None:
    md = comparison_markdown(check_within_noise()[1])
    (row,) = [line for line in md.splitlines() if line.startswith("| s/a | format |")]
    assert "| 🎲 2/5 → ❌ 0/1 |" in row

    md = comparison_markdown(flaky_improvement()[1])
    (row,) = [line for line in md.splitlines() if line.startswith("| s/a |")]
    assert "| 🎲 2/10 → ✅ 10/10 |" in row and "flaky" not in row.split("|")[3]


def _cells(table: object, column: int) -> list[str]:
    return [str(c) for c in table.columns[column].cells]  # type: ignore[attr-defined]


def test_terminal_shows_rates_in_the_colour_of_the_rate() -> None:
    changes: list[CheckChange] = check_within_noise()[1].check_within_noise
    table = compare_render._check_table("t", changes)
    assert _cells(table, 2) == [f"[{STATUS_STYLE['flaky']}]2/5[/]"]
    assert _cells(table, 3) == [f"[{STATUS_STYLE['fail']}]0/1[/]"]

    table = compare_render._changes_table("t", flaky_improvement()[1].improvements)
    assert _cells(table, 1) == [f"[{STATUS_STYLE['flaky']}]2/10[/]"]
    assert _cells(table, 2) == [f"[{STATUS_STYLE['pass']}]10/10[/]"]


def test_terminal_prints_the_rates_not_the_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    compare_render.render_comparison(check_within_noise()[1])
    out = capsys.readouterr().out
    (line,) = [ln for ln in out.splitlines() if "format" in ln]
    assert "2/5" in line and "0/1" in line and " fail " not in f" {line} "


def test_a_diff_of_sampled_runs_shows_both_rates(capsys: pytest.CaptureFixture[str]) -> None:
    a = f.run([_ran("s/a", 2, 5), _ran("s/b", 1, 1)])
    b = f.run([_ran("s/a", 5, 5), _ran("s/b", 0, 1)])
    diff = compare_runs(a, b)
    sampled, single = diff.cases if diff.cases[0].key == "s/a" else diff.cases[::-1]
    assert sampled.rate_a is not None and sampled.rate_b is not None
    assert (sampled.rate_a.passed, sampled.rate_a.runs, sampled.rate_b.passed) == (2, 5, 5)
    # Run once on both sides: its status says it all.
    assert single.rate_a is None and single.rate_b is None
    compare_render.render_diff(diff)
    out = capsys.readouterr().out
    assert "2/5→5/5" in out and "pass→fail" in out


def test_a_sampled_case_is_badged_by_its_rate_on_the_run_and_matrix_pages() -> None:
    sampled, once = _ran("s/a", 3, 5), _ran("s/b", 0, 1)
    rate = ("3/5", "badge rate", f"background: {STATUS_COLOURS['flaky']}")
    assert _span(_wrap(case_badge(sampled))) == rate
    assert _span(_wrap(case_badge(once))) == (
        "fail",
        "badge",
        f"background: {STATUS_COLOURS['fail']}",
    )
    # The run page's case table keeps the status and colours the passed column by the rate.
    root = ET.fromstring(run_page(f.run([sampled, once])).encode("utf-8"))
    rows = root.findall(f".//{H}section[@id='cases']//{H}tbody/{H}tr")
    passed = {row[0].findtext(f".//{H}code"): row[2] for row in rows}
    assert (passed["s/a"].text or "").startswith("3/5")
    assert passed["s/a"].get("style") == f"color: {STATUS_COLOURS['flaky']}"
    assert passed["s/b"].get("style") is None


def _wrap(span: ET.Element) -> ET.Element:
    td = ET.Element("td")
    td.append(span)
    return td
