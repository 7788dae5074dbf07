"""`evalctl crash-test`: SIGKILL the local daemon and measure detection and recovery."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import BaseModel
from rich.markup import escape
from rich.table import Table

from evalctl.cli import history_store, options
from evalctl.cli.output import emit, stderr, stdout
from evalctl.errors import Ended, ExitCode, Outcome
from evalctl.userfiles import MAX_TIMEOUT_S

if TYPE_CHECKING:
    from evalctl.stability.models import KillRecord


class CrashFilesOut(BaseModel):
    out_dir: str
    json_path: str
    toml_path: str
    html_path: str


class CrashOutput(BaseModel):
    files: CrashFilesOut
    # The whole crash-test result, as written to crash-test.json.
    result: dict[str, object]


def _render(out: CrashOutput) -> None:
    from evalctl.stability.describe import ms
    from evalctl.stability.models import CrashResult

    result = CrashResult.model_validate(out.result)
    table = Table(
        title=f"crash-test {result.crash_id} · {result.environment.model_name}",
        title_justify="left",
    )
    for column in ("#", "mode", "pid → new", "client saw", "detect", "recover"):
        table.add_column(column, no_wrap=True)
    table.add_column("result", overflow="fold")
    for k in result.kills:
        outcome = "[green]ok[/]" if k.recovered else f"[red]FAILED[/] {escape(k.error or '')}"
        table.add_row(
            str(k.n),
            "mid-gen" if k.mode == "mid-generation" else "between",
            f"{k.killed_pid} → {k.new_pid or '-'}",
            escape(_short_failure(k.failure_seen)),
            ms(k.detection_ms),
            ms(k.recovery_ms),
            outcome,
        )
    stdout.print(table)
    s = result.summary
    verdict = "[bold green]PASSED[/]" if result.passed else "[bold red]FAILED[/]"
    stdout.print(
        f"{verdict} · recovered {s.recovered}/{s.kills} · detection p50 {ms(s.detection_ms.p50)} "
        f"(max {ms(s.detection_max_ms)}) · recovery p50 {ms(s.recovery_ms.p50)} "
        f"(max {ms(s.recovery_max_ms)}) · probe request {ms(result.probe.latency_ms)}"
    )
    if result.kills:
        sockets = sum(k.stale_socket_left for k in result.kills)
        freed = sum(k.lock_released for k in result.kills)
        owned = sum(k.lock_owner_ok for k in result.kills)
        stdout.print(
            f"left behind by the killed daemons: {sockets}/{s.kills} sockets, locks freed "
            f"{freed}/{s.kills}; respawns that took over socket and lock: {owned}/{s.kills}",
            style="dim",
        )
    if result.error:
        stdout.print(f"[yellow]stopped early:[/] {escape(result.error)}", soft_wrap=True)
    stdout.print(escape(f"results: {out.files.json_path}"), soft_wrap=True)
    stdout.print(escape(f"report: {out.files.html_path}"), soft_wrap=True)


def _short_failure(seen: str) -> str:
    """ "ServerCrashedError: ..." -> "ServerCrashedError"; the lifecycle's wording -> "pid gone"."""
    if seen.startswith("lifecycle:"):
        return "pid gone"
    return seen.split(":", 1)[0]


def _progress(record: KillRecord) -> None:
    from evalctl.stability.describe import ms

    outcome = "recovered" if record.recovered else f"FAILED: {record.error}"
    stderr.print(
        escape(
            f"kill {record.n} ({record.mode}) pid {record.killed_pid} · detected in "
            f"{ms(record.detection_ms)} · new pid {record.new_pid} in {ms(record.recovery_ms)}"
            f" · {outcome}"
        ),
        style="dim",
        soft_wrap=True,
    )


def crash_test(
    kills: Annotated[
        int, typer.Option("--kills", "-k", min=1, help="How many times to SIGKILL.")
    ] = 3,
    mid_generation: Annotated[
        bool,
        typer.Option(
            "--mid-generation",
            help="Alternate kills: during a generation (first), then between requests.",
        ),
    ] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            max=MAX_TIMEOUT_S,
            help="Per-request timeout in seconds (respawn included).",
        ),
    ] = 120.0,
    model: Annotated[str | None, options.MODEL] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Directory for crash-test.json/.toml/.html.")
    ] = None,
    store: history_store.StoreOpt = None,
    no_store: history_store.NoStoreOpt = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> Outcome | None:
    """SIGKILL the local daemon and prove the client notices and recovers on its own.

    Each kill: the daemon serves, SIGKILL, the client must see the failure (between
    requests: the daemon is gone; mid-generation: ServerCrashedError), the stale socket
    and lock must not block a respawn, and the next request must get a new daemon (new
    pid) and an answer. Reports detection and recovery time per kill.

    Exit 0 every kill recovered, 1 a recovery failed, 3 the daemon never worked.
    """
    from evalctl.reports.crash_page import crash_page
    from evalctl.results.io import write_text_atomic
    from evalctl.stability.crash import CrashPlan, new_crash_id, run_crash_test, write_crash

    plan = CrashPlan(kills=kills, mid_generation=mid_generation, timeout_s=timeout)
    plan.check()
    settings = options.settings_from_env()
    provider = options.stability_provider(settings, model)
    crash_id = new_crash_id()
    out_dir = out or settings.results_dir / crash_id
    try:
        result = run_crash_test(
            provider, plan, progress=None if as_json else _progress, crash_id=crash_id
        )
    finally:
        provider.close()
    files = write_crash(result, out_dir)
    write_text_atomic(files.html, crash_page(result))
    emit(
        CrashOutput(
            files=CrashFilesOut(
                out_dir=str(out_dir),
                json_path=str(files.json),
                toml_path=str(files.toml),
                html_path=str(files.html),
            ),
            result=result.model_dump(mode="json"),
        ),
        as_json,
        _render,
    )
    ended = _ended(result.probe.ok, result.passed)
    history_store.record_verdict(
        settings, options.environ(), store, no_store, kind="crash-test", subject=crash_id,
        outcome="pass" if ended is None else "fail",
        exit_code=int(ended.exit_code) if ended else 0,
        body={"out_dir": str(out_dir), **result.model_dump(mode="json")},
    )  # fmt: skip
    return ended


def _ended(probe_ok: bool, passed: bool) -> Outcome | None:
    if not probe_ok:
        return Ended(ExitCode.INFRA)
    if not passed:
        return Ended(ExitCode.GATE_FAILED)
    return None


def register(app: typer.Typer) -> None:
    app.command("crash-test")(crash_test)
