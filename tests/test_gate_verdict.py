"""One home for exit codes, a typed gate verdict, and comparison categories as data."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from evalctl.baselines.comparison import (
    CATEGORIES,
    CaseChange,
    CheckChange,
    Comparison,
    GateVerdict,
    MetricChange,
    NewCase,
    UnscoredCase,
)
from evalctl.baselines.gate import RULES, STRICT, compare_baseline, rule_named
from evalctl.baselines.statistical import GateChange, GateRule
from evalctl.errors import BadInputError, Ended, ExitCode, Outcome
from evalctl.reports.comparison_markdown import comparison_markdown
from evalctl.reports.run_page import run_page
from tests import factories as f
from tests.conftest import REPO


def test_every_exit_code_has_a_meaning_a_verdict_word_a_tone_and_an_icon() -> None:
    for code in ExitCode:
        assert code.meaning and code.verdict and code.icon
        assert code.tone in ("pass", "fail", "error", "flaky", "skipped")
    assert ExitCode.GATE_FAILED.verdict == "FAILED"
    assert ExitCode.INFRA.verdict == "UNSCORED"


def test_a_gate_verdict_and_a_plain_ending_are_outcomes() -> None:
    assert isinstance(GateVerdict(exit_code=ExitCode.OK), Outcome)
    assert isinstance(Ended(ExitCode.INFRA), Outcome)


def _every_category() -> Comparison:
    """A comparison with one entry in every category."""
    case = CaseChange(key="s/case", baseline="pass", current="fail")
    check = CheckChange(key="s/chk", check="c", baseline="pass", current="fail", case_status="fail")
    entries: dict[str, list[object]] = {
        "case": [case],
        "check": [check],
        "key": ["s/key"],
        "unscored": [UnscoredCase(key="s/u", status="error", reason="boom", in_baseline=True)],
        "new": [NewCase(key="s/new", status="pass")],
        "metric": [
            MetricChange(
                key="s",
                metric="tokens_out",
                run=30.0,
                baseline_mean=10.0,
                baseline_sd=1.0,
                tolerance=0.5,
                limit=17.0,
            )
        ],
    }
    fields = {c.field: entries[c.shape] for c in CATEGORIES}
    return Comparison(
        baseline_provider="p",
        baseline_model="m",
        run_id="r",
        run_provider="p",
        run_model="m",
        update_command="evalctl baseline",
        **fields,
    )


def test_the_verdict_is_the_most_severe_gating_category_with_every_reason() -> None:
    verdict = _every_category().verdict
    assert verdict.exit_code == ExitCode.GATE_FAILED
    assert verdict.summary == (
        "quality gate failed: 1 regression (s/case); 1 check regression (s/chk: c); "
        "1 metric regression (s: tokens_out); 1 orphaned (s/key)"
    )


def test_unscored_alone_gives_exit_3_with_its_reason_and_hint() -> None:
    run = f.run([f.case("s/a", "error")])
    verdict = compare_baseline(f.baseline({"s/a": "pass"}), run).verdict
    assert verdict.exit_code == ExitCode.INFRA
    assert verdict.summary == "infrastructure: 1 case could not be scored (s/a)"
    assert verdict.hint is not None and "prerequisite" in verdict.hint


def test_json_keeps_the_int_exit_code_beside_the_typed_verdict() -> None:
    data = _every_category().model_dump(mode="json")
    assert data["exit_code"] == 1
    assert data["verdict"]["exit_code"] == 1
    assert data["gate"] == "strict"


def test_every_counted_category_is_in_the_counts_line_in_order() -> None:
    line = _every_category().counts_line()
    counted = [c.count(1) for c in CATEGORIES if c.counted]
    assert line == " · ".join(counted)


def test_every_listed_category_reaches_the_step_summary_and_the_html_page() -> None:
    cmp = _every_category()
    markdown = comparison_markdown(cmp)
    page = run_page(f.run([f.case("s/case", "fail")]), cmp)
    for category in CATEGORIES:
        if category.in_step_summary:
            assert f"### {category.title}" in markdown
        if category.listed:
            assert category.title in page


def test_the_gate_rule_is_swappable_and_statistical_is_the_default() -> None:
    class Lenient(GateRule):
        name = "lenient"

        def case_change(self, *_: object) -> GateChange:
            return "unchanged"

        def check_change(self, *_: object) -> GateChange:
            return "unchanged"

    run = f.run([f.case("s/a", "fail")])
    baseline = f.baseline({"s/a": "pass"})
    # `strict` names the rule of every suite that names none of its own.
    assert RULES["strict"](baseline, run, 0.05).judged_by("s/a") == STRICT.name
    # One pass -> fail of one sample each: strict gates, the default weighs it as noise.
    assert compare_baseline(baseline, run, rule=STRICT).exit_code == ExitCode.GATE_FAILED
    default = compare_baseline(baseline, run)
    assert default.gate == "statistical" and default.exit_code == ExitCode.OK
    assert [c.key for c in default.within_noise] == ["s/a"]
    lenient = compare_baseline(baseline, run, rule=Lenient())
    assert lenient.exit_code == ExitCode.OK and lenient.gate == "lenient"


@pytest.mark.parametrize("path", sorted((REPO / "evalctl" / "cli").glob("*.py")), ids=str)
def test_only_app_turns_outcomes_into_exits(path: Path) -> None:
    """Commands return an Outcome; no command exits the process or raises a bare code."""
    if path.name in ("app.py", "__main__.py"):
        return
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("exit", "Exit"):
            owner = node.value
            assert not (isinstance(owner, ast.Name) and owner.id in ("sys", "typer")), (
                f"{path.name}:{node.lineno} exits on its own"
            )


def test_an_unknown_gate_rule_is_bad_input_naming_the_known_ones() -> None:
    run = f.run([f.case("s/a", "pass")])
    with pytest.raises(
        BadInputError, match="unknown gate 'lenient' \\(known: statistical, strict\\)"
    ):
        rule_named("lenient", f.baseline({"s/a": "pass"}), run)


def test_every_list_of_a_comparison_is_a_category() -> None:
    """A new list on `Comparison` without its category would reach no renderer."""
    lists = {
        name
        for name, field in Comparison.model_fields.items()
        if str(field.annotation).startswith("list[")
    }
    # `warnings` and `platform_changes` are about the files compared, not about cases.
    assert lists - {"warnings", "platform_changes"} == {c.field for c in CATEGORIES}
