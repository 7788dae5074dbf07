"""The gate's verdict as Markdown, for `$GITHUB_STEP_SUMMARY`: the job page then shows why
`compare` passed or failed, with the expected and actual value of every regressed check."""

from __future__ import annotations

from evalctl.baselines.compare import CaseChange, CheckChange, Comparison
from evalctl.reports.markdown import cell

_ICON = {0: "✅", 1: "❌", 3: "💥"}


def _case_rows(changes: list[CaseChange]) -> list[str]:
    rows = []
    for c in changes:
        if not c.failures:
            detail = c.reason or ""
            rows.append(
                f"| {cell(c.key)} | - | {c.baseline} → {c.current} | - | - | {cell(detail)} |"
            )
        for f in c.failures:
            rows.append(
                f"| {cell(c.key)} | {cell(f.name)} | {c.baseline} → {c.current} | "
                f"{cell(f.expected)} | {cell(f.actual)} | {cell(f.reason)} |"
            )
    return rows


def _check_rows(changes: list[CheckChange]) -> list[str]:
    return [
        f"| {cell(c.key)} | {cell(c.check)} | {c.baseline} → {c.current} | "
        f"{cell(c.expected)} | {cell(c.actual)} | {cell(c.reason)} |"
        for c in changes
    ]


_HEADER = [
    "| case | check | change | expected | actual | reason |",
    "|---|---|---|---|---|---|",
]


def comparison_markdown(cmp: Comparison) -> str:
    lines = [
        f"## {_ICON.get(cmp.exit_code, '')} evalctl compare: {cmp.verdict} (exit {cmp.exit_code})",
        "",
        f"baseline `{cell(cmp.baseline_file or '')}` ({cell(cmp.baseline_provider)} · "
        f"{cell(cmp.baseline_model)}) vs run `{cell(cmp.run_id)}`",
        "",
        cmp.counts_line(),
        "",
    ]
    lines += [f"> warning: {cell(w)}" for w in cmp.warnings]
    if cmp.warnings:
        lines.append("")
    rows = _case_rows(cmp.regressions) + _check_rows(cmp.check_regressions)
    if rows:
        lines += ["### Regressions", "", *_HEADER, *rows, ""]
    if cmp.orphaned:
        lines += ["### Orphaned (in the baseline, missing from the results)", ""]
        lines += [f"- {cell(k)}" for k in cmp.orphaned] + [""]
    if cmp.unscored:
        lines += ["### Unscored", ""]
        lines += [f"- {cell(u.key)} ({u.status}): {cell(u.reason)}" for u in cmp.unscored] + [""]
    if cmp.passing_check_regressions:
        lines += ["### Check regressions inside passing cases (not gating)", "", *_HEADER]
        lines += [*_check_rows(cmp.passing_check_regressions), ""]
    better = [c.key for c in cmp.improvements] + [
        f"{c.key}: {c.check}" for c in cmp.check_improvements
    ]
    if better:
        lines += ["### Improvements", ""] + [f"- {cell(k)}" for k in better] + [""]
    return "\n".join(lines)
