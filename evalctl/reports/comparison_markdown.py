"""The gate's verdict as Markdown, for `$GITHUB_STEP_SUMMARY`: the job page then shows why
`compare` passed or failed, with the expected and actual value of every regressed check."""

from __future__ import annotations

from evalctl.baselines.comparison import (
    CATEGORIES,
    CaseChange,
    Category,
    CheckChange,
    Comparison,
    MetricChange,
    RateInterval,
    UnscoredCase,
    label,
)
from evalctl.baselines.metrics import metric_label, metric_value
from evalctl.reports.markdown import cell, rate_cell


def _outcome(status: str, rate: RateInterval | None) -> str:
    """A side of a change: its sampled pass rate where it has one (`🎲 2/5`), else its status."""
    return status if rate is None else rate_cell(rate.passed, rate.runs)


def _change(c: CaseChange | CheckChange) -> str:
    return f"{_outcome(c.baseline, c.baseline_rate)} → {_outcome(c.current, c.current_rate)}"


def _case_rows(changes: list[CaseChange]) -> list[str]:
    rows = []
    for c in changes:
        if not c.failures:
            detail = c.reason or ""
            rows.append(f"| {cell(c.key)} | - | {_change(c)} | - | - | {cell(detail)} |")
        for i, f in enumerate(c.failures):
            # The rates and the evidence (statistical gate, flaky baseline) once per case.
            why = f" ({cell(c.reason)})" if c.reason and i == 0 else ""
            rows.append(
                f"| {cell(c.key)} | {cell(f.name)} | {_change(c)}{why} | "
                f"{cell(f.expected)} | {cell(f.actual)} | {cell(f.reason)} |"
            )
    return rows


def _check_rows(changes: list[CheckChange]) -> list[str]:
    return [
        f"| {cell(c.key)} | {cell(c.check)} | {_change(c)} | "
        f"{cell(c.expected)} | {cell(c.actual)} | "
        f"{cell('; '.join(t for t in (c.reason, c.evidence or '') if t))} |"
        for c in changes
    ]


def _metric_rows(changes: list[MetricChange]) -> list[str]:
    rows = ["| suite | metric | now | limit | baseline | tolerance |", "|---|---|---|---|---|---|"]
    for c in changes:
        spread = f" ± {metric_value(c.metric, c.baseline_sd)}" if c.baseline_sd else ""
        rows.append(
            f"| {cell(c.key)} | {metric_label(c.metric)} | {metric_value(c.metric, c.run)} | "
            f"{metric_value(c.metric, c.limit)} | "
            f"{cell(metric_value(c.metric, c.baseline_mean) + spread)} | {c.tolerance:.0%} |"
        )
    return rows


_HEADER = [
    "| case | check | change | expected | actual | reason |",
    "|---|---|---|---|---|---|",
]


def comparison_markdown(cmp: Comparison) -> str:
    verdict = cmp.verdict
    code = verdict.exit_code
    lines = [
        f"## {code.icon} evalctl compare: {verdict.word} (exit {int(code)})",
        "",
        f"baseline `{cell(cmp.baseline_file or '')}` ({cell(cmp.baseline_provider)} · "
        f"{cell(cmp.baseline_model)}) vs run `{cell(cmp.run_id)}`",
        "",
        cmp.counts_line(),
        "",
    ]
    if cmp.platform_line:
        lines.append(f"> {cell(cmp.platform_line)}")
    lines += [f"> warning: {cell(w)}" for w in cmp.warnings]
    if cmp.warnings or cmp.platform_line:
        lines.append("")
    for category in CATEGORIES:
        entries = cmp.entries(category)
        if category.in_step_summary and entries:
            lines += [f"### {category.title}", "", *_section(category, entries), ""]
    return "\n".join(lines)


def _section(category: Category, entries: list[object]) -> list[str]:
    """One category's rows: a table where there are checks to show, else a list."""
    if category.shape == "case":
        return [*_HEADER, *_case_rows([e for e in entries if isinstance(e, CaseChange)])]
    if category.shape == "check":
        return [*_HEADER, *_check_rows([e for e in entries if isinstance(e, CheckChange)])]
    if category.shape == "metric":
        return _metric_rows([e for e in entries if isinstance(e, MetricChange)])
    if category.shape == "unscored":
        return [
            f"- {cell(u.key)} ({u.status}): {cell(u.reason)}"
            for u in entries
            if isinstance(u, UnscoredCase)
        ]
    return [f"- {cell(label(e))}" for e in entries]
