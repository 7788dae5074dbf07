"""The crash-test's HTML page, for `evalctl crash-test` and `evalctl report FILE --html` on
kind "crash-test"."""

from __future__ import annotations

from evalctl.reports.kit.card import STATUS_COLOURS, card
from evalctl.reports.kit.elements import el
from evalctl.reports.kit.page import page, section
from evalctl.reports.kit.table import Cell, num, table
from evalctl.reports.soak_page import environment_table
from evalctl.stability.describe import environment_rows, ms
from evalctl.stability.models import CrashResult

# ---------------------------------------------------------------- the crash-test


# One row per kill, in this order, on the HTML page and in the runbook's Markdown
# (evalctl.reports.runbook): the two renderings of one record keep the same columns.
KILL_COLUMNS = (
    "kill",
    "mode",
    "killed pid",
    "client saw",
    "detection",
    "stale socket",
    "lock freed",
    "new pid",
    "recovery",
    "result",
)


def crash_page(result: CrashResult) -> str:
    s = result.summary
    verdict, colour = (
        ("PASSED", STATUS_COLOURS["pass"]) if result.passed else ("FAILED", STATUS_COLOURS["fail"])
    )
    cards = [
        card("result", verdict, colour),
        card("recovered", f"{s.recovered} / {s.kills}"),
        card("detection p50", ms(s.detection_ms.p50)),
        card("detection max", ms(s.detection_max_ms)),
        card("recovery p50", ms(s.recovery_ms.p50)),
        card("recovery max", ms(s.recovery_max_ms)),
        card("probe request", ms(result.probe.latency_ms)),
    ]
    rows: list[list[Cell]] = [
        [
            num(str(k.n)),
            k.mode,
            num(str(k.killed_pid)),
            k.failure_seen,
            num(ms(k.detection_ms)),
            "yes" if k.stale_socket_left else "no",
            "yes" if k.lock_released else "no",
            num("-" if k.new_pid is None else str(k.new_pid)),
            num(ms(k.recovery_ms)),
            el(
                "td",
                el(
                    "span",
                    "recovered" if k.recovered else "FAILED",
                    style=f"color: {STATUS_COLOURS['pass' if k.recovered else 'fail']}",
                ),
                f" {k.error}" if k.error else None,
            ),
        ]
        for k in result.kills
    ]
    return page(
        f"evalctl crash-test · {result.crash_id}",
        el("h1", f"evalctl crash-test {result.crash_id}"),
        el(
            "p",
            f"{result.environment.model_name} · started {result.started_at} · finished "
            f"{result.finished_at or '-'} · {result.environment.host}",
            class_="meta",
        ),
        el("p", f"stopped early: {result.error}", class_="warn") if result.error else None,
        section("Result", el("div", *cards, class_="cards"), id_="result"),
        section(f"Kills ({len(result.kills)})", table(list(KILL_COLUMNS), rows), id_="kills"),
        section(
            "Environment",
            environment_table(environment_rows(result.environment)),
            id_="environment",
        ),
    )
