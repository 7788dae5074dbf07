"""Markdown summary of a run: for a pull request comment or a GitHub job summary.

Short on purpose: the headline numbers, then only what needs a reader's attention (failed,
errored, flaky, skipped cases), then every case folded away in a <details> block. GitHub
renders the HTML subset used here (<details>, <summary>, <br>); other renderers show it as
text, which still reads.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalctl.errors import BadInputError
from evalctl.reports.write import write_report
from evalctl.results.models import SCORED, RunResult
from evalctl.results.text import pass_rate, percent, plural, rate_tone, visible_controls
from evalctl.secrets import redact, redact_before_cut

_CELL_LIMIT = 160
_ICONS = {"pass": "✅", "fail": "❌", "error": "💥", "skipped": "⏭️", "flaky": "🎲"}


def rate_cell(passed: int, runs: int) -> str:
    """`🎲 2/5`: a sampled pass rate behind the icon of its rate (Markdown has no colour)."""
    return f"{_ICONS.get(rate_tone(passed, runs), '')} {passed}/{runs}".strip()


def cell(value: Any) -> str:
    """Text safe inside a table cell: one line, no pipes, no HTML, control characters made
    visible (a NUL or an ANSI escape from a model must not reach a job page), bounded length."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = redact_before_cut(visible_controls(text), _CELL_LIMIT)
    if len(text) > _CELL_LIMIT:
        text = text[: _CELL_LIMIT - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    # Backslash-escape Markdown's own syntax that would otherwise change the cell's meaning.
    for char in "\\|`*_[]":
        text = text.replace(char, "\\" + char)
    return " ".join(text.split())  # newlines would end the table row


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def to_markdown(run: RunResult) -> str:
    s = run.summary
    lines = [
        f"## evalctl · {cell(run.provider.name)} · {cell(run.provider.model)}",
        "",
        f"**{s.passed}/{s.total} passed** ({percent(s.pass_rate)} of scored) · {s.failed} failed · "
        f"{s.flaky} flaky · {plural(s.errors, 'error')} · {s.skipped} skipped"
        + (" · **interrupted**" if run.interrupted else ""),
        "",
        f"checks: {s.checks_passed} passed · {s.checks_failed} failed · {s.checks_na} n/a "
        "(nothing to test)",
        "",
    ]
    metrics = [
        [
            "latency p50 / p95 / p99",
            f"{s.latency_ms.p50:.0f} / {s.latency_ms.p95:.0f} / {s.latency_ms.p99:.0f} ms",
        ],
        ["first-try pass rate", percent(s.first_try_rate)],
        ["turns (mean)", f"{s.turns_mean:.2f}"],
        ["tokens in / out", f"{s.usage.input_tokens} / {s.usage.output_tokens}"],
    ]
    if s.tokens_per_s is not None:
        metrics.append(["tokens/s", f"{s.tokens_per_s:.1f}"])
    if s.estimated_cost_usd is not None:
        metrics.append(["estimated cost", f"${s.estimated_cost_usd:.4f}"])
    if run.settings.repeats > 1:
        metrics.append(["repeats per case", str(run.settings.repeats)])
    if run.settings.shard is not None:
        metrics.append(["shard", f"{run.settings.shard.index}/{run.settings.shard.count}"])
    lines += _table(["metric", "value"], metrics)

    failed = [c for c in run.cases if c.status == "fail"]
    if failed:
        rows = []
        for case in failed:
            for check in (c for c in case.checks if c.failed):
                rows.append(
                    [
                        cell(case.key),
                        cell(check.name),
                        cell(check.expected),
                        cell(check.actual),
                        cell(check.message),
                    ]
                )
            if not any(c.failed for c in case.checks):
                why = "every check was n/a" if case.checks else "no check ran"
                rows.append([cell(case.key), "-", "-", "-", why])
        lines += [f"### ❌ Failed ({len(failed)})", ""]
        lines += _table(["case", "check", "expected", "actual", "reason"], rows)
    errors = [c for c in run.cases if c.status == "error"]
    if errors:
        lines += [f"### 💥 Errors ({len(errors)})", ""]
        rows = [
            [cell(c.key), cell(("server crashed: " if c.server_crashed else "") + (c.error or ""))]
            for c in errors
        ]
        lines += _table(["case", "error"], rows)
    flaky = [c for c in run.cases if c.status == "flaky"]
    if flaky:
        lines += [f"### 🎲 Flaky ({len(flaky)})", ""]
        lines += _table(["case", "passed (95% CI)"], [[cell(c.key), pass_rate(c)] for c in flaky])
    na = [(c, ch) for c in run.cases if c.status in SCORED for ch in c.checks if ch.not_applicable]
    if na:
        lines += [f"<details><summary>n/a checks ({len(na)}): nothing to test</summary>", ""]
        lines += _table(
            ["case", "check", "reason"],
            [[cell(c.key), cell(ch.name), cell(ch.message)] for c, ch in na],
        )
        lines += ["</details>", ""]
    skipped = [c for c in run.cases if c.status == "skipped"]
    if skipped:
        lines += [f"### ⏭️ Skipped ({len(skipped)})", ""]
        lines += _table(
            ["case", "reason"], [[cell(c.key), cell(c.skip_reason or "")] for c in skipped]
        )

    lines += [f"<details><summary>All {len(run.cases)} cases</summary>", ""]
    rows = [
        [
            cell(c.key),
            f"{_ICONS.get(c.status, '')} {c.status}",
            pass_rate(c),
            f"{c.latency_ms:.0f} ms",
            str(c.turns),
        ]
        for c in run.cases
    ]
    lines += _table(["case", "status", "passed", "latency", "turns"], rows)
    lines += ["</details>", "", f"<sub>run {cell(run.run_id)}</sub>", ""]
    return "\n".join(lines)


def write_markdown(run: RunResult, path: Path, env: Mapping[str, str]) -> str:
    """Write the summary to `path` (`-`: nowhere, the caller prints the returned text); also
    append it to `$GITHUB_STEP_SUMMARY` when set (GitHub Actions renders that file on the
    job's page; appending keeps other steps' summaries). Returns the summary."""
    text = to_markdown(run)
    if path != Path("-"):
        write_report(path, text)
    step_summary = env.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        try:
            with open(step_summary, "a", encoding="utf-8") as fh:
                # Not through results.io (an append, not a replace): redacted here instead.
                fh.write(redact(text) + "\n")
        except OSError as exc:
            raise BadInputError(
                f"cannot append the summary: {exc.strerror}",
                file=step_summary,
                field="GITHUB_STEP_SUMMARY",
            ) from None
    return text
