"""A Rich progress bar for runs, on stderr so `--json` output on stdout stays clean."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from evalctl.results.models import CaseResult
from evalctl.results.text import STATUS_STYLE


class RunProgress:
    def __init__(self, total: int, *, enabled: bool):
        self._enabled = enabled
        self._console = Console(stderr=True)
        self._progress = Progress(
            TextColumn("[bold]{task.description}", justify="left"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(
                "[green]{task.fields[passed]} pass[/] [red]{task.fields[failed]} fail[/] "
                "[magenta]{task.fields[errors]} error[/]"
            ),
            TimeElapsedColumn(),
            console=self._console,
            disable=not enabled,
        )
        self._task: TaskID = self._progress.add_task(
            "starting", total=total, passed=0, failed=0, errors=0
        )
        self._passed = 0
        self._failed = 0
        # Infrastructure errors are neither passes nor failures, and the one count a watcher
        # most needs to see early (a dead provider fails every case after it).
        self._errors = 0

    def __enter__(self) -> RunProgress:
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()

    def start(self, key: str) -> None:
        self._progress.update(self._task, description=key)

    def advance(self, case: CaseResult) -> None:
        self._passed += case.status == "pass"
        self._failed += case.status in ("fail", "flaky")
        self._errors += case.status == "error"
        self._progress.update(
            self._task,
            advance=1,
            passed=self._passed,
            failed=self._failed,
            errors=self._errors,
            description=case.key,
        )
        if self._enabled and not self._console.is_terminal:
            # Without a live display (CI logs), one line per case is the useful record.
            style = STATUS_STYLE.get(case.status, "")
            done = self._progress.tasks[0].completed
            self._console.print(
                f"[{style}]{case.status:>7}[/] {case.key}  "
                f"({done}/{self._progress.tasks[0].total}: {self._passed} pass · "
                f"{self._failed} fail · {self._errors} error)",
                markup=True,
                highlight=False,
            )
