"""Results rendered into the runbooks' results templates: `evalctl report FILE --markdown`.

runbooks/full-benchmark.md, soak.md and new-model-validation.md each end with a results
template; these functions produce exactly those tables from a result file, so nobody
copies numbers by hand. The renderer is chosen by the document's `kind`:
`run` -> full benchmark, `soak` -> soak, `crash-test` -> crash test. A run made without
--restart-per-case is not a full benchmark: the same table is titled "Run report".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evalctl.reports.crash_page import KILL_COLUMNS
from evalctl.reports.markdown import cell
from evalctl.reports.pages import renderer_for
from evalctl.results.document import Document
from evalctl.results.models import RunResult
from evalctl.results.text import percent
from evalctl.stability.describe import (
    environment_rows,
    mib,
    ms,
    pct,
    per_request,
    signed_mib,
)
from evalctl.stability.models import (
    CrashResult,
    SoakResult,
    crash_from_document,
    soak_from_document,
)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def _environment(rows: list[tuple[str, str]], extra: Sequence[tuple[str, str]] = ()) -> list[str]:
    return _table(["field", "value"], [[cell(k), cell(v)] for k, v in [*extra, *rows]])


# ---------------------------------------------------------------- full benchmark (a run)


def run_markdown(run: RunResult) -> str:
    s, settings = run.summary, run.settings
    procedure = (
        f"fresh daemon per case (--restart-per-case), cooldown {settings.cooldown_s:g}s"
        if settings.restart_per_case
        else "one daemon for the whole run"
    )
    # Only --restart-per-case is the runbook's full-benchmark procedure; say what this was.
    title = "Full benchmark" if settings.restart_per_case else "Run report"
    lines = [f"## {title} · {cell(run.provider.name)} · {cell(run.provider.model)}", ""]
    lines += _environment(
        environment_rows(
            run.environment, model=run.provider.model, sha256=run.provider.model_sha256
        ),
        extra=[
            ("run", run.run_id),
            ("started / finished", f"{run.started_at} / {run.finished_at or '-'}"),
            ("procedure", procedure),
            ("suites", ", ".join(settings.suites) or "-"),
        ],
    )
    lines += ["### Results", ""]
    lines += _table(
        ["cases", "pass", "fail", "flaky", "error", "skipped", "pass rate", "p50", "p95", "tok/s"],
        [
            [
                str(s.total),
                str(s.passed),
                str(s.failed),
                str(s.flaky),
                str(s.errors),
                str(s.skipped),
                percent(s.pass_rate),
                ms(s.latency_ms.p50),
                ms(s.latency_ms.p95),
                "-" if s.tokens_per_s is None else f"{s.tokens_per_s:.1f}",
            ]
        ],
    )
    if run.interrupted:
        lines += ["**Interrupted**: cases that never ran are missing.", ""]
    rows = []
    for c in run.cases:
        d = c.daemon
        errors = "; ".join(d.transport_errors) if d and d.transport_errors else (c.error or "")
        pid = "-" if d is None or d.pid is None else str(d.pid)
        if d is not None and d.final_pid is not None:
            pid += f" → {d.final_pid}"
        rows.append(
            [
                cell(c.key),
                c.status,
                ms(d.duration_ms) if d else ms(c.latency_ms),
                pid,
                ms(d.start_ms) if d else "-",
                f"{c.usage.input_tokens} / {c.usage.output_tokens}",
                cell(errors) if errors else "-",
            ]
        )
    lines += [f"### Per case ({len(run.cases)})", ""]
    lines += _table(
        [
            "case",
            "status",
            "duration",
            "daemon pid",
            "daemon start",
            "tokens in / out",
            "transport errors",
        ],
        rows,
    )
    return "\n".join(lines)


# ---------------------------------------------------------------- soak


def soak_markdown(result: SoakResult) -> str:
    v, settings = result.verdict, result.settings
    lines = [f"## Soak · {cell(result.environment.model_name)} · **{v.verdict}**", ""]
    lines += _environment(
        environment_rows(result.environment),
        extra=[
            ("soak", result.soak_id),
            ("started / finished", f"{result.started_at} / {result.finished_at or '-'}"),
            ("daemon pid", str(result.daemon.pid)),
        ],
    )
    lines += ["### Settings", ""]
    lines += _table(
        ["requests", "warm-up", "sample every", "threshold", "cases cycled"],
        [
            [
                f"{len(result.requests)} / {settings.requests}",
                str(settings.warmup),
                str(settings.sample_every),
                f"{settings.threshold_pct:g}%",
                f"{len(settings.cases)} ({cell(', '.join(settings.suites) or '-')})",
            ]
        ],
    )
    lines += ["### Verdict (anonymous memory, after the warm-up)", ""]
    lines += _table(
        ["verdict", "growth", "slope", "R²", "second half", "baseline", "final"],
        [
            [
                f"**{v.verdict}**",
                pct(v.growth_pct),
                per_request(v.slope_bytes_per_request),
                "-" if v.r_squared is None else f"{v.r_squared:.2f}",
                per_request(v.late_slope_bytes_per_request),
                "-" if v.baseline_bytes is None else mib(v.baseline_bytes),
                "-" if v.final_bytes is None else mib(v.final_bytes),
            ]
        ],
    )
    lines += [cell(v.reason), ""]
    if result.error:
        lines += [f"**Stopped early**: {cell(result.error)}", ""]
    if result.interrupted:
        lines += ["**Interrupted**: the samples so far are kept.", ""]
    baseline = v.baseline_bytes
    rows = [
        [
            str(s.request),
            mib(s.rss_bytes),
            mib(s.uss_bytes),
            mib(s.anon_bytes),
            "-" if baseline is None else signed_mib(s.anon_bytes - baseline),
            "warm-up" if s.request < settings.warmup else "",
        ]
        for s in result.samples
    ]
    lines += [f"### Samples ({len(result.samples)})", ""]
    lines += _table(["request #", "RSS", "USS", "anon", "Δ anon vs baseline", "note"], rows)
    return "\n".join(lines)


# ---------------------------------------------------------------- crash test


def crash_markdown(result: CrashResult) -> str:
    s = result.summary
    verdict = "PASSED" if result.passed else "FAILED"
    lines = [f"## Crash test · {cell(result.environment.model_name)} · **{verdict}**", ""]
    lines += _environment(
        environment_rows(result.environment),
        extra=[
            ("crash test", result.crash_id),
            ("started / finished", f"{result.started_at} / {result.finished_at or '-'}"),
            (
                "kills",
                f"{result.settings.kills}"
                + (
                    " (alternating, mid-generation first)" if result.settings.mid_generation else ""
                ),
            ),
        ],
    )
    lines += ["### Summary", ""]
    lines += _table(
        ["recovered", "detection p50", "detection max", "recovery p50", "recovery max", "probe"],
        [
            [
                f"{s.recovered} / {s.kills}",
                ms(s.detection_ms.p50),
                ms(s.detection_max_ms),
                ms(s.recovery_ms.p50),
                ms(s.recovery_max_ms),
                ms(result.probe.latency_ms),
            ]
        ],
    )
    if result.error:
        lines += [f"**Stopped early**: {cell(result.error)}", ""]
    rows = [
        [
            str(k.n),
            k.mode,
            str(k.killed_pid),
            cell(k.failure_seen),
            ms(k.detection_ms),
            "yes" if k.stale_socket_left else "no",
            "yes" if k.lock_released else "no",
            "-" if k.new_pid is None else str(k.new_pid),
            ms(k.recovery_ms),
            "recovered" if k.recovered else f"**FAILED** {cell(k.error or '')}",
        ]
        for k in result.kills
    ]
    lines += [f"### Kills ({len(result.kills)})", ""]
    lines += _table(list(KILL_COLUMNS), rows)
    return "\n".join(lines)


# ---------------------------------------------------------------- by kind


def _run(doc: Document) -> str:
    from evalctl.results.io import run_from_document

    return run_markdown(run_from_document(doc))


def _soak(doc: Document) -> str:
    return soak_markdown(soak_from_document(doc))


def _crash(doc: Document) -> str:
    return crash_markdown(crash_from_document(doc))


def _baseline(doc: Document) -> str:
    from evalctl.reports.quality import quality_markdown

    return quality_markdown(doc)


MARKDOWN_RENDERERS: dict[str, Callable[[Document], str]] = {
    "run": _run,
    "soak": _soak,
    "crash-test": _crash,
    # Not a runbook section: the quality table a README quotes (evalctl.reports.quality).
    "baseline": _baseline,
}


def render_markdown(doc: Document) -> str:
    """The runbook results section for `doc`, chosen by its kind."""
    return renderer_for(doc, MARKDOWN_RENDERERS, "Markdown")(doc)
