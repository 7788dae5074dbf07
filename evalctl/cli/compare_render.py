"""How `evalctl compare` draws its verdict: one comparison (`render_comparison`), a diff of two
runs (`render_diff`), a matrix's cells (`render_matrix_comparison`), and the verdict appended
to a GitHub Actions job page (`step_summary`). Rendering only: what is drawn is computed in
`baselines/gating.py`.
"""

from __future__ import annotations

import json
import os
from typing import TypeVar

from rich.markup import escape
from rich.measure import Measurement
from rich.rule import Rule
from rich.table import Table

from evalctl.baselines.comparison import (
    CATEGORIES,
    CaseChange,
    Category,
    CheckChange,
    Comparison,
    MetricChange,
    MetricReport,
    NewCase,
    RateInterval,
    UnscoredCase,
)
from evalctl.baselines.diff import RunDiff
from evalctl.baselines.gating import MatrixComparison
from evalctl.baselines.metrics import baseline_figure, metric_label, metric_value, reported
from evalctl.cli.output import stdout
from evalctl.errors import BadInputError
from evalctl.results.text import STATUS_STYLE, rate_tone, visible_controls
from evalctl.secrets import redact

# Rows shown per section unless --all: a 10,000-case run with 1,000 regressions must still
# print a readable verdict quickly (Rich lays out every row it is given). --json and the
# step summary are not limited.
DEFAULT_ROWS = 25

_SHORT_COLUMNS = frozenset({"baseline", "now", "status", "in baseline", "A→B", "Δ ms", "Δ tokens"})
T = TypeVar("T")
_MARKERS = {"regression": " [bold red]▼[/]", "improvement": " [bold green]▲[/]"}


def _status(status: str | None) -> str:
    if status is None:
        return "[dim]-[/]"
    return f"[{STATUS_STYLE.get(status, 'dim')}]{status}[/]"


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False)
    # Case keys are what a reader greps for: never wrapped or cut, other columns give way.
    table.add_column(columns[0], no_wrap=True)
    for column in columns[1:]:
        # Short columns (statuses, deltas) stay on one line; free text folds.
        short = column in _SHORT_COLUMNS
        table.add_column(column, no_wrap=short, overflow="ellipsis" if short else "fold")
    return table


def _print_table(table: Table) -> None:
    """The table, or, when its case keys leave the other columns no room, each row as lines:
    the key whole on its own line (never cut or folded letter by letter: it is what a reader
    greps for), then the row's other cells, labelled by their headers."""
    if Measurement.get(stdout, stdout.options.update_width(10_000), table).minimum <= stdout.width:
        stdout.print(table)
        return
    if table.title:
        stdout.print(table.title)
    key_column, *others = table.columns
    columns = [(column.header, list(column.cells)) for column in others]
    for row, key in enumerate(key_column.cells):
        stdout.print(key, soft_wrap=True)
        labelled = [f"[dim]{header}[/] {cells[row]}" for header, cells in columns if cells[row]]
        if labelled:
            stdout.print("    " + " · ".join(labelled), soft_wrap=True)


def _shown(items: list[T], limit: int | None) -> list[T]:
    return items if limit is None else items[:limit]


def _left_out(total: int, limit: int | None, what: str) -> None:
    if limit is not None and total > limit:
        stdout.print(
            f"[dim]... {total - limit} more {what} not shown (of {total}; --all lists every "
            "one, --json has them all)[/]"
        )


def _title(category: Category) -> str:
    # Gating sections in bold: they are why the exit code is not 0.
    weight = "bold " if category.gates else ""
    return f"[{weight}{STATUS_STYLE[category.tone]}]{category.title}[/]"


def _changes_table(title: str, changes: list[CaseChange]) -> Table:
    table = _table(title, "case", "baseline", "now", "failed checks")
    for c in changes:
        # A flaky baseline's entry is about pass rates; its reason says what they show.
        detail = ", ".join(c.failed_checks)
        if c.reason:
            detail = f"{detail}; {c.reason}" if detail else c.reason
        before = _outcome(c.baseline, c.baseline_rate)
        table.add_row(escape(c.key), before, _outcome(c.current, c.current_rate), escape(detail))
    return table


def _print_failures(changes: list[CaseChange]) -> None:
    """Each regressed case's failed checks with expected, actual and the reason: lines rather
    than table cells, so long values stay readable (and greppable) in a CI log."""
    for c in changes:
        if not c.failures:
            continue
        stdout.print(escape(c.key), soft_wrap=True, highlight=False)
        for f in c.failures:
            line = f"  {f.name}: expected {_excerpt(f.expected)}, actual {_short(f.actual)}"
            stdout.print(escape(line), soft_wrap=True, highlight=False)
            if f.reason:
                stdout.print(escape(f"    {_short(f.reason)}"), soft_wrap=True, highlight=False)


def _check_table(title: str, changes: list[CheckChange]) -> Table:
    table = _table(title, "case", "check", "baseline", "now", "expected / actual / reason")
    for c in changes:
        detail = f"expected {_excerpt(c.expected)}, actual {_short(c.actual)}"
        if c.reason:
            detail += f" ({c.reason})"
        if c.evidence:
            detail += f"; {c.evidence}"
        table.add_row(
            escape(c.key),
            escape(c.check),
            _outcome(c.baseline, c.baseline_rate),
            _outcome(c.current, c.current_rate),
            escape(detail),
        )
    return table


def _metric_table(title: str, changes: list[MetricChange]) -> Table:
    table = _table(title, "suite", "metric", "now", "limit", "baseline")
    for c in changes:
        spread = f" ± {metric_value(c.metric, c.baseline_sd)}" if c.baseline_sd else ""
        table.add_row(
            escape(c.key),
            metric_label(c.metric),
            metric_value(c.metric, c.run),
            metric_value(c.metric, c.limit),
            f"{metric_value(c.metric, c.baseline_mean)}{spread}, tolerance {c.tolerance:.0%}",
        )
    return table


def _metrics_table(metrics: dict[str, list[MetricReport]]) -> Table:
    """Every suite's metrics beside the baseline's: reported whether or not they gate."""
    table = _table(
        "Suite metrics (now vs baseline mean ± sd)", "suite", "metric", "now", "baseline"
    )
    for suite, r in reported(metrics):
        table.add_row(
            escape(suite),
            metric_label(r.metric),
            metric_value(r.metric, r.run),
            baseline_figure(r),
        )
    return table


_SHORT_LIMIT = 200
# What a check expected can be a whole judge rubric: a reader needs only enough to know which.
_EXCERPT_LIMIT = 80


def _short(value: object, limit: int = _SHORT_LIMIT) -> str:
    """`value` on one line (a row of a table, a line of a CI log), cut at `limit`."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(visible_controls(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _excerpt(value: object) -> str:
    """The start of what a check expected; the rest is in --json and the results."""
    return _short(value, _EXCERPT_LIMIT)


def _outcome(status: str | None, rate: RateInterval | None) -> str:
    """A side of a change: its sampled pass rate where it has one (`2/5`, in the colour of
    the rate), else its status."""
    if rate is None:
        return _status(status)
    return f"[{STATUS_STYLE[rate_tone(rate.passed, rate.runs)]}]{rate.passed}/{rate.runs}[/]"


def render_comparison(cmp: Comparison, limit: int | None = DEFAULT_ROWS) -> None:
    """Print the verdict; each section lists at most `limit` rows (None: all)."""
    # Paths, keys and commands are printed unwrapped (soft_wrap) and escaped: they must
    # survive copy and paste, and a `[` in them is not Rich markup.
    stdout.print(
        escape(
            f"baseline {cmp.baseline_file or ''} ({cmp.baseline_provider} · {cmp.baseline_model})"
            f"  vs  run {cmp.run_id} ({cmp.run_provider} · {cmp.run_model})"
        ),
        soft_wrap=True,
    )
    if cmp.platform_line:
        stdout.print(f"[yellow]{escape(cmp.platform_line)}[/]", soft_wrap=True)
    for warning in cmp.warnings:
        stdout.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
    if cmp.rules:
        rules = "; ".join(f"{suite}: {rule}" for suite, rule in cmp.rules.items())
        stdout.print(escape(f"judged by: {rules} (alpha {cmp.alpha or 0:g})"), soft_wrap=True)
    if cmp.confirmation is not None:
        stdout.print(escape(_confirmation_line(cmp)), soft_wrap=True)
    if reported(cmp.metrics):
        _print_table(_metrics_table(cmp.metrics))
    for category in CATEGORIES:
        entries = cmp.entries(category)
        if category.listed and entries:
            _print_section(category, _shown(entries, limit))
            _left_out(len(entries), limit, category.nouns(len(entries)))

    if cmp.improvements or cmp.check_improvements or cmp.orphaned or cmp.new:
        better = cmp.improvements or cmp.check_improvements
        why = "accept improvements" if better else "record the current case set"
        stdout.print(f"to {why}, update the baseline:")
        stdout.print(f"  {cmp.update_command}", soft_wrap=True, markup=False, highlight=False)
        if cmp.regressions or cmp.check_regressions:
            stdout.print("[yellow]note:[/] that would also accept the regressions above")
    if cmp.out_of_scope:
        stdout.print(f"[dim]{cmp.out_of_scope} baseline cases not selected by this run[/]")

    verdict = cmp.verdict
    colour = STATUS_STYLE[verdict.exit_code.tone]
    stdout.print(f"[bold {colour}]{verdict.word}[/]: {cmp.counts_line()}", soft_wrap=True)


def _confirmation_line(cmp: Comparison) -> str:
    """Which drops the run's confirmation samples confirmed, and which they did not."""
    c = cmp.confirmation
    assert c is not None
    parts = [
        f"confirmation: {c.samples} fresh samples per dropped case (baseline K = "
        f"{c.baseline_samples})"
    ]
    for label, keys in (
        ("confirmed", c.confirmed),
        ("not confirmed", c.not_confirmed),
        ("not re-sampled", c.not_resampled),
    ):
        if keys:
            shown = ", ".join(keys[:10]) + (f" and {len(keys) - 10} more" if len(keys) > 10 else "")
            parts.append(f"{label}: {shown}")
    if len(parts) == 1:
        parts.append("no case dropped")
    return "; ".join(parts)


def _print_section(category: Category, entries: list[object]) -> None:
    """One category's rows, drawn by the shape of its entries."""
    title = _title(category)
    if category.shape == "case":
        changes = [e for e in entries if isinstance(e, CaseChange)]
        _print_table(_changes_table(title, changes))
        if category.gates:
            _print_failures(changes)
    elif category.shape == "check":
        _print_table(_check_table(title, [e for e in entries if isinstance(e, CheckChange)]))
    elif category.shape == "metric":
        _print_table(_metric_table(title, [e for e in entries if isinstance(e, MetricChange)]))
    elif category.shape == "unscored":
        table = _table(title, "case", "status", "in baseline", "reason")
        for u in entries:
            assert isinstance(u, UnscoredCase)
            in_baseline = "yes" if u.in_baseline else "no"
            table.add_row(escape(u.key), _status(u.status), in_baseline, escape(u.reason))
        _print_table(table)
    elif category.shape == "new":
        table = _table(title, "case", "status")
        for n in entries:
            assert isinstance(n, NewCase)
            table.add_row(escape(n.key), _status(n.status))
        _print_table(table)
    else:
        table = _table(title, "case")
        for key in entries:
            table.add_row(escape(str(key)))
        _print_table(table)


def _delta(value: float | None, unit: str = "", fmt: str = "+.0f") -> str:
    return "-" if value is None else f"{value:{fmt}}{unit}"


def render_diff(diff: RunDiff, limit: int | None = DEFAULT_ROWS) -> None:
    """Print the diff; the case table lists at most `limit` rows (None: all), the cases
    that changed first."""
    a, b = diff.run_a, diff.run_b
    for label, ref, path in (("A", a, diff.file_a), ("B", b, diff.file_b)):
        line = f"{label}: {ref.run_id} ({ref.provider} · {ref.model})  {path or ''}"
        stdout.print(escape(line), soft_wrap=True)
    # Deltas only, and the change shown by the marker, to fit an 80-column CI log; absolute
    # figures and the change names are in --json.
    table = _table("Cases", "case", "A→B", "Δ ms", "Δ tokens")
    ordered = [c for c in diff.cases if c.change != "unchanged"]
    ordered += [c for c in diff.cases if c.change == "unchanged"]
    for c in _shown(ordered, limit):
        table.add_row(
            escape(c.key),
            f"{_outcome(c.status_a, c.rate_a)}→{_outcome(c.status_b, c.rate_b)}"
            f"{_MARKERS.get(c.change, '')}",
            _delta(c.latency_delta_ms),
            _delta(c.tokens_delta),
        )
    _print_table(table)
    _left_out(len(ordered), limit, "cases")
    for warning in diff.warnings:
        stdout.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)

    s = diff.summary
    summary = _table("Summary", "metric", "A", "B", "Δ")

    def rate(value: float | None) -> str:
        return "-" if value is None else f"{value:.0%}"

    summary.add_row(
        "pass rate",
        rate(s.a.pass_rate),
        rate(s.b.pass_rate),
        _delta(None if s.pass_rate_delta is None else s.pass_rate_delta * 100, " pts"),
    )
    for name, va, vb, dv in (
        ("latency p50", s.a.latency_ms.p50, s.b.latency_ms.p50, s.latency_p50_delta_ms),
        ("latency p95", s.a.latency_ms.p95, s.b.latency_ms.p95, s.latency_p95_delta_ms),
        ("latency p99", s.a.latency_ms.p99, s.b.latency_ms.p99, s.latency_p99_delta_ms),
    ):
        summary.add_row(name, f"{va:.0f} ms", f"{vb:.0f} ms", _delta(dv, " ms"))
    summary.add_row(
        "turns (mean)",
        f"{s.a.turns_mean:.2f}",
        f"{s.b.turns_mean:.2f}",
        _delta(s.turns_mean_delta, fmt="+.2f"),
    )
    summary.add_row(
        "input tokens",
        str(s.a.usage.input_tokens),
        str(s.b.usage.input_tokens),
        _delta(s.input_tokens_delta),
    )
    summary.add_row(
        "output tokens",
        str(s.a.usage.output_tokens),
        str(s.b.usage.output_tokens),
        _delta(s.output_tokens_delta),
    )
    summary.add_row(
        "tokens/s",
        _delta(s.a.tokens_per_s, fmt=".1f"),
        _delta(s.b.tokens_per_s, fmt=".1f"),
        _delta(s.tokens_per_s_delta, fmt="+.1f"),
    )
    stdout.print(summary)
    counts = {k: len(diff.by_change(k)) for k in ("regression", "improvement", "added", "removed")}
    stdout.print(
        f"{counts['regression']} regressed (▼) · {counts['improvement']} improved (▲) · "
        f"{counts['added']} only in B · {counts['removed']} only in A"
    )


def step_summary(cmp: Comparison) -> None:
    """In GitHub Actions, append the verdict and the regressions to the job page."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if not path:
        return
    from evalctl.reports.comparison_markdown import comparison_markdown

    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(redact(comparison_markdown(cmp)) + "\n")
    except OSError as exc:
        raise BadInputError(
            f"cannot append the verdict: {exc.strerror}", file=path, field="GITHUB_STEP_SUMMARY"
        ) from None


def _counts(cmp: Comparison) -> str:
    """The categories a cell has entries in: `1 regression · 200 unchanged`."""
    counts = ((c, len(cmp.entries(c))) for c in CATEGORIES if c.counted)
    return " · ".join(c.count(n) for c, n in counts if n)


def render_matrix_comparison(out: MatrixComparison, limit: int | None) -> None:
    for c in out.cells:
        if c.comparison is None:
            continue
        stdout.print(Rule(f"cell {escape(c.cell)}", align="left"))
        render_comparison(c.comparison, limit)
    table = Table(title=f"matrix {escape(out.run_id)}", title_justify="left", show_edge=False)
    table.add_column("cell", no_wrap=True)
    table.add_column("verdict", no_wrap=True)
    table.add_column("detail", overflow="fold")
    for c in out.cells:
        if c.comparison is not None:
            verdict = c.comparison.verdict
            word = f"[{STATUS_STYLE[verdict.exit_code.tone]}]{verdict.word}[/]"
            detail = _counts(c.comparison)
        else:
            word = f"[dim]{c.outcome}[/]"
            detail = f"{c.reason or ''} ({c.baseline_file})"
        table.add_row(escape(c.cell), word, escape(detail))
    stdout.print(table)
    new = [c for c in out.cells if c.outcome == "new"]
    if new:
        stdout.print(f"{len(new)} cell(s) without a baseline, not gated; to record them:")
        stdout.print(
            f"  evalctl baseline --from {out.matrix_dir}",
            soft_wrap=True,
            markup=False,
            highlight=False,
        )
