"""What a matrix report shows, read once from the index and the cells' results: a column
per cell with its figures (and, against baselines, its gate verdict), a row per case with its
row's values and each cell's status, failure reasons, answer and prompt as sent (and its
change against the cell's baseline). The HTML page (`matrix_page`) and the Markdown
(`matrix_markdown`) draw the same view."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalctl.baselines.comparison import CATEGORIES, Comparison
from evalctl.results.matrix import MatrixCell, MatrixIndex
from evalctl.results.models import CaseResult, RunResult
from evalctl.results.text import percent


@dataclass(frozen=True)
class Column:
    cell: MatrixCell
    run: RunResult | None  # None: the cell did not run (its skip reason says why)
    # Against baselines (`report MATRIX_DIR --baseline DIR`): the cell gated on its own, or
    # why it was not (`no baseline for this cell`); neither without --baseline.
    comparison: Comparison | None = None
    baseline_note: str | None = None
    # Each case's change against the cell's baseline, by key (`regression`, ...).
    changes: dict[str, tuple[str, str]] = field(default_factory=dict)

    def gate(self) -> tuple[str, str, str] | None:
        """(verdict word, tone, detail) of the cell's gate; None when not compared."""
        if self.comparison is not None:
            verdict = self.comparison.verdict
            counts = [
                c.count(len(self.comparison.entries(c)))
                for c in CATEGORIES
                if c.counted and c.gates and self.comparison.entries(c)
            ]
            detail = " · ".join(counts) or "no regression"
            return verdict.word, verdict.exit_code.tone, detail
        if self.baseline_note is not None:
            return "NOT GATED", "skipped", self.baseline_note
        return None

    @property
    def title(self) -> str:
        return self.cell.id

    @property
    def subtitle(self) -> str:
        """provider · model · prompt variant, as the run recorded them."""
        model = self.run.provider.model if self.run else self.cell.model or "default model"
        parts = [self.cell.provider, model]
        if self.cell.prompt:
            parts.append(f"prompt {self.cell.prompt}")
        return " · ".join(parts)

    def figures(self) -> list[tuple[str, str]]:
        """(label, value): pass rate, tokens in/out, cost, latency median and p95."""
        if self.run is None:
            return [("skipped", self.cell.skip_reason or "did not run")]
        s = self.run.summary
        scored = s.passed + s.failed + s.flaky
        # Unbilled providers (local, scripted) and models missing from the price table.
        cost = "not priced" if s.estimated_cost_usd is None else _usd(s.estimated_cost_usd)
        return [
            ("pass rate", f"{_rate(s.pass_rate)} ({s.passed}/{scored})"),
            ("tokens in/out", f"{s.usage.input_tokens}/{s.usage.output_tokens}"),
            ("cost", cost),
            ("latency p50/p95", f"{s.latency_ms.p50:.0f}/{s.latency_ms.p95:.0f} ms"),
        ]


def _usd(cost: float) -> str:
    """Two significant digits at least: a matrix's cheap cells are what it compares, and
    $0.0000 beside $0.0001 would hide a 2.5x difference."""
    if cost <= 0:
        return "$0"
    decimals = max(2, 1 - math.floor(math.log10(cost)))
    return f"${cost:,.{decimals}f}"


def _rate(rate: float | None) -> str:
    """Whole percent, but never 100% or 0% for a rate that is not: 200 of 201 is 99.5%."""
    if rate is None or rate in (0.0, 1.0) or 0.01 <= rate <= 0.99:
        return percent(rate)
    return f"{rate:.1%}"


@dataclass(frozen=True)
class Row:
    key: str
    # One per column, in column order; None where that cell has no such case.
    cases: list[CaseResult | None]

    @property
    def values(self) -> dict[str, Any]:
        """The row's values (a data-file row's columns), as the first cell recorded them."""
        return next((dict(c.vars) for c in self.cases if c is not None and c.vars), {})

    @property
    def differs(self) -> bool:
        """The cells that ran the case did not all end with one status."""
        return len({c.status for c in self.cases if c is not None}) > 1


@dataclass(frozen=True)
class MatrixView:
    index: MatrixIndex
    columns: list[Column]
    rows: list[Row]


def matrix_view(
    index: MatrixIndex,
    runs: Mapping[str, RunResult],
    comparisons: Mapping[str, Comparison] | None = None,
    baseline_notes: Mapping[str, str] | None = None,
) -> MatrixView:
    """`runs`: each cell's results by cell id (a cell that did not run has none);
    `comparisons`: each gated cell's comparison with its baseline, `baseline_notes` why a
    cell that ran was not gated (against a baselines directory)."""
    comparisons = comparisons or {}
    notes = baseline_notes or {}
    columns = [
        Column(
            cell,
            runs.get(cell.id),
            comparisons.get(cell.id),
            notes.get(cell.id),
            _changes(comparisons.get(cell.id)),
        )
        for cell in index.cells
    ]
    keys: dict[str, None] = {}
    by_cell: list[dict[str, CaseResult]] = []
    for column in columns:
        cases = {c.key: c for c in column.run.cases} if column.run else {}
        keys.update(dict.fromkeys(cases))
        by_cell.append(cases)
    rows = [Row(key, [cases.get(key) for cases in by_cell]) for key in keys]
    return MatrixView(index, columns, rows)


def answer(case: CaseResult) -> str:
    """What the cell shows of a case: its final answer, else its tool calls, else its error."""
    if case.output.strip():
        return case.output
    if case.tool_calls:
        calls = ", ".join(f"{t.name}({_args(t.arguments)})" for t in case.tool_calls)
        return f"(tool calls) {calls}"
    return case.error or case.skip_reason or "(no answer)"


def _args(arguments: Mapping[str, object]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in arguments.items())


def failed_checks(case: CaseResult) -> list[str]:
    return [c.name for c in case.checks if c.failed]


def failure_reasons(case: CaseResult) -> list[str]:
    """Why the case did not pass, one line each: every failed check with its message, and
    the case's error."""
    reasons = [f"{c.name}: {c.message}" if c.message else c.name for c in case.checks if c.failed]
    if case.error:
        reasons.append(case.error)
    return reasons


def sent_prompt(case: CaseResult) -> str | None:
    """The prompt the cell sent: the last user message of the case's first turn, as
    rendered (a prompt variant applied); None where the results hold no transcript."""
    if not case.transcript:
        return None
    users = [m.content for m in case.transcript[0].sent if m.role == "user"]
    return users[-1] if users else None


def row_values(values: Mapping[str, Any], limit: int = 60) -> str:
    """`topic=bananas · audience=kids`, each value cut to `limit` characters."""
    shown = []
    for name, value in values.items():
        text = value if isinstance(value, str) else repr(value)
        text = " ".join(text.split())
        shown.append(f"{name}={text if len(text) <= limit else text[: limit - 1] + '…'}")
    return " · ".join(shown)


def _changes(comparison: Comparison | None) -> dict[str, tuple[str, str]]:
    """Each case's change in a comparison, by key: (what it is, its tone); the first
    category (in the comparison's order) that names the case wins."""
    if comparison is None:
        return {}
    out: dict[str, tuple[str, str]] = {}
    for category in CATEGORIES:
        if category.field == "unchanged" or category.shape == "metric":
            continue
        for entry in comparison.entries(category):
            key = entry if isinstance(entry, str) else getattr(entry, "key", None)
            if isinstance(key, str):
                out.setdefault(key, (category.nouns(1), category.tone))
    return out
