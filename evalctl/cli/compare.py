"""`evalctl compare`: gate a run on its baseline, or diff two runs.

Which comparison runs is decided by the files' content (`kind`, else their shape), not by
their names: BASELINE RESULTS gates; RESULTS_A RESULTS_B diffs.
"""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.markup import escape
from rich.table import Table

from evalctl.baselines.compare import CaseChange, CheckChange, Comparison, RateInterval, RunDiff
from evalctl.cli import options
from evalctl.cli.output import emit, stdout
from evalctl.errors import BadInputError, ExitCode, GateFailedError, InfraError
from evalctl.results.text import visible_controls
from evalctl.secrets import redact

# Rows shown per section unless --all: a 10,000-case run with 1,000 regressions must still
# print a readable verdict quickly (Rich lays out every row it is given). --json and the
# step summary are not limited.
DEFAULT_ROWS = 25

_SHORT_COLUMNS = frozenset({"baseline", "now", "status", "in baseline", "A→B", "Δ ms", "Δ tokens"})
T = TypeVar("T")
_MARKERS = {"regression": " [bold red]▼[/]", "improvement": " [bold green]▲[/]"}
_COLOURS = {"pass": "green", "fail": "red", "error": "magenta", "flaky": "yellow"}


def _status(status: str | None) -> str:
    if status is None:
        return "[dim]-[/]"
    return f"[{_COLOURS.get(status, 'dim')}]{status}[/]"


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False)
    # Case keys are what a reader greps for: never wrapped or cut, other columns give way.
    table.add_column(columns[0], no_wrap=True)
    for column in columns[1:]:
        # Short columns (statuses, deltas) stay on one line; free text folds.
        short = column in _SHORT_COLUMNS
        table.add_column(column, no_wrap=short, overflow="ellipsis" if short else "fold")
    return table


def _shown(items: list[T], limit: int | None) -> list[T]:
    return items if limit is None else items[:limit]


def _left_out(total: int, limit: int | None, what: str) -> None:
    if limit is not None and total > limit:
        stdout.print(
            f"[dim]... {total - limit} more {what} not shown (of {total}; --all lists every "
            "one, --json has them all)[/]"
        )


def _changes_table(title: str, changes: list[CaseChange]) -> Table:
    table = _table(title, "case", "baseline", "now", "failed checks")
    for c in changes:
        # A flaky baseline's entry is about pass rates; its reason says what they show.
        detail = ", ".join(c.failed_checks)
        if c.reason:
            detail = f"{detail}; {c.reason}" if detail else c.reason
        before = _status(c.baseline) + _rate(c.baseline_rate)
        table.add_row(
            escape(c.key), before, _status(c.current) + _rate(c.current_rate), escape(detail)
        )
    return table


def _print_failures(changes: list[CaseChange]) -> None:
    """Each regressed case's failed checks with expected, actual and the reason: lines rather
    than table cells, so long values stay readable (and greppable) in a CI log."""
    for c in changes:
        if not c.failures:
            continue
        stdout.print(escape(c.key), soft_wrap=True, highlight=False)
        for f in c.failures:
            line = f"  {f.name}: expected {_short(f.expected)}, actual {_short(f.actual)}"
            stdout.print(escape(line), soft_wrap=True, highlight=False)
            if f.reason:
                stdout.print(escape(f"    {_short(f.reason)}"), soft_wrap=True, highlight=False)


def _check_table(title: str, changes: list[CheckChange]) -> Table:
    table = _table(title, "case", "check", "baseline", "now", "expected / actual / reason")
    for c in changes:
        detail = f"expected {_short(c.expected)}, actual {_short(c.actual)}"
        if c.reason:
            detail += f" ({c.reason})"
        table.add_row(
            escape(c.key), escape(c.check), _status(c.baseline), _status(c.current), escape(detail)
        )
    return table


_SHORT_LIMIT = 200


def _short(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = visible_controls(text)
    return text if len(text) <= _SHORT_LIMIT else text[: _SHORT_LIMIT - 1] + "…"


def _rate(rate: RateInterval | None) -> str:
    return "" if rate is None else f" {rate.passed}/{rate.runs}"


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
    for warning in cmp.warnings:
        stdout.print(f"[yellow]warning:[/] {escape(warning)}", soft_wrap=True)
    if cmp.regressions:
        shown = _shown(cmp.regressions, limit)
        stdout.print(_changes_table("[bold red]Regressions[/]", shown))
        _print_failures(shown)
        _left_out(len(cmp.regressions), limit, "regressions")
    if cmp.check_regressions:
        stdout.print(
            _check_table(
                "[bold red]Check regressions (inside cases that fail either way)[/]",
                _shown(cmp.check_regressions, limit),
            )
        )
        _left_out(len(cmp.check_regressions), limit, "check regressions")
    if cmp.orphaned:
        table = _table("[bold red]Orphaned (in the baseline, missing from the results)[/]", "case")
        for key in _shown(cmp.orphaned, limit):
            table.add_row(escape(key))
        stdout.print(table)
        _left_out(len(cmp.orphaned), limit, "orphaned cases")
    if cmp.unscored:
        table = _table("[bold magenta]Unscored[/]", "case", "status", "in baseline", "reason")
        for u in _shown(cmp.unscored, limit):
            in_baseline = "yes" if u.in_baseline else "no"
            table.add_row(escape(u.key), _status(u.status), in_baseline, escape(u.reason))
        stdout.print(table)
        _left_out(len(cmp.unscored), limit, "unscored cases")
    if cmp.improvements:
        stdout.print(_changes_table("[bold green]Improvements[/]", _shown(cmp.improvements, limit)))
        _left_out(len(cmp.improvements), limit, "improvements")
    if cmp.check_improvements:
        stdout.print(
            _check_table("[bold green]Check improvements[/]", _shown(cmp.check_improvements, limit))
        )
        _left_out(len(cmp.check_improvements), limit, "check improvements")
    if cmp.new:
        table = _table("[yellow]New (not in the baseline)[/]", "case", "status")
        for n in _shown(cmp.new, limit):
            table.add_row(escape(n.key), _status(n.status))
        stdout.print(table)
        _left_out(len(cmp.new), limit, "new cases")
    if cmp.passing_check_regressions:
        stdout.print(
            _check_table(
                "[yellow]Check regressions inside passing cases (not gating: the threshold "
                "still passes the case)[/]",
                _shown(cmp.passing_check_regressions, limit),
            )
        )
        _left_out(len(cmp.passing_check_regressions), limit, "check regressions in passing cases")
    if cmp.flaky_changes:
        stdout.print(
            _changes_table(
                "[dim]Flaky in the baseline, no credible change (not gating)[/]",
                _shown(cmp.flaky_changes, limit),
            )
        )
        _left_out(len(cmp.flaky_changes), limit, "flaky cases")

    if cmp.improvements or cmp.check_improvements or cmp.orphaned or cmp.new:
        better = cmp.improvements or cmp.check_improvements
        why = "accept improvements" if better else "record the current case set"
        stdout.print(f"to {why}, update the baseline:")
        stdout.print(f"  {cmp.update_command}", soft_wrap=True, markup=False, highlight=False)
        if cmp.regressions or cmp.check_regressions:
            stdout.print("[yellow]note:[/] that would also accept the regressions above")
    if cmp.out_of_scope:
        stdout.print(f"[dim]{cmp.out_of_scope} baseline cases not selected by this run[/]")

    colour = {0: "bold green", 1: "bold red", 3: "bold magenta"}.get(cmp.exit_code, "bold")
    stdout.print(f"[{colour}]{cmp.verdict}[/]: {cmp.counts_line()}", soft_wrap=True)


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
            f"{_status(c.status_a)}→{_status(c.status_b)}{_MARKERS.get(c.change, '')}",
            _delta(c.latency_delta_ms),
            _delta(c.tokens_delta),
        )
    stdout.print(table)
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


def _gate(cmp: Comparison) -> None:
    """Turn the verdict into the exit code, via the errors `main` maps (one line on stderr)."""
    if cmp.exit_code == ExitCode.GATE_FAILED:
        parts = []
        if cmp.regressions:
            parts.append(f"{_n(len(cmp.regressions), 'regression')} ({_keys(cmp.regressions)})")
        if cmp.check_regressions:
            named = ", ".join(f"{c.key}: {c.check}" for c in cmp.check_regressions[:5])
            more = " ..." if len(cmp.check_regressions) > 5 else ""
            parts.append(f"{_n(len(cmp.check_regressions), 'check regression')} ({named}{more})")
        if cmp.orphaned:
            parts.append(f"{len(cmp.orphaned)} orphaned ({', '.join(cmp.orphaned[:5])})")
        raise GateFailedError("quality gate failed: " + "; ".join(parts))
    if cmp.exit_code == ExitCode.INFRA:
        keys = ", ".join(u.key for u in cmp.unscored[:5])
        raise InfraError(
            f"{_n(len(cmp.unscored), 'case')} could not be scored ({keys})",
            hint="an infrastructure error or a missing prerequisite; see the reasons above",
        )


def _step_summary(cmp: Comparison) -> None:
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


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _keys(changes: list[CaseChange]) -> str:
    return ", ".join(c.key for c in changes[:5]) + (" ..." if len(changes) > 5 else "")


def compare(
    first: Annotated[
        Path, typer.Argument(metavar="BASELINE|RESULTS_A", help="A baseline or results.")
    ],
    second: Annotated[
        Path, typer.Argument(metavar="RESULTS", help="Results (file or run directory).")
    ],
    show_all: Annotated[
        bool,
        typer.Option(
            "--all", help=f"List every case in each section (default: at most {DEFAULT_ROWS})."
        ),
    ] = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Gate results on a baseline, or diff two runs.

    BASELINE RESULTS: regressions, check regressions, orphaned, unscored, improvements and
    new cases.

    Exit 1 on a regression (a case pass -> fail), a check regression (a check pass -> fail
    inside a case that failed before and fails now) or an orphaned case, else 3 if a case
    could not be scored, else 0.

    A case flaky in the baseline gates only when its pass rate really dropped:
    the run's Wilson 95% interval lies wholly below the baseline's.
    Example: baseline 9/10, interval 60%-98%. With --repeats 10, a run passing
    2/10 (6%-51%) is a regression; 5/10 (24%-76%) is not, nor is one failed run (0/1: 0%-79%).
    This needs a baseline written from a --repeats run; see docs/flaky.md.

    RESULTS_A RESULTS_B: per-case status changes and latency/token deltas; exit 0.

    Malformed or mismatched files exit 2, naming the file and field.
    """
    from evalctl.baselines.compare import compare_baseline, compare_runs
    from evalctl.baselines.model import baseline_from_document
    from evalctl.results.document import load_document, require_kind
    from evalctl.results.io import run_from_document

    # Statuses, checks and figures are all a comparison reads: skip the conversations.
    doc_a = load_document(first, skip_conversations=True)
    doc_b = load_document(second, skip_conversations=True)
    if doc_a.kind == "baseline":
        baseline = baseline_from_document(doc_a)
        run = run_from_document(doc_b)
        cmp = compare_baseline(baseline, run, results_path=doc_b.path, baseline_path=doc_a.path)
        emit(cmp, as_json, partial(render_comparison, limit=None if show_all else DEFAULT_ROWS))
        _step_summary(cmp)
        _gate(cmp)
        return
    if doc_a.kind == "run":
        if doc_b.kind == "baseline":
            raise BadInputError(
                "this is a baseline; it goes first: evalctl compare BASELINE RESULTS",
                file=str(doc_b.path),
                field="kind",
            )
        diff = compare_runs(
            run_from_document(doc_a),
            run_from_document(doc_b),
            path_a=doc_a.path,
            path_b=doc_b.path,
        )
        emit(diff, as_json, partial(render_diff, limit=None if show_all else DEFAULT_ROWS))
        return
    # Neither: let the kind check word the error for the first file.
    require_kind(doc_a, "baseline")


def register(app: typer.Typer) -> None:
    app.command("compare")(compare)
