"""The one door a run is observed through: its events, delivered to listeners.

In the style of inspect_ai's hooks: a listener subclasses `RunListener` and overrides the
events it cares about (each defaults to doing nothing). The runner calls them in order:
`run_started` once the run's header exists, `case_finished` for each case as it is
journaled, `confirmation` for each case re-sampled by `run --baseline`, and `run_finished`
once results.json is written (also for an interrupted run, whose results hold the cases that
finished). The run store is the first listener (evalctl.cli.history_store); the progress
display and the journal could be next.

A listener must not break the run: whatever one raises is caught here and handed to its
`failed` hook (which by default ignores it), and the run goes on. Listeners are called on
the thread that finished the case; they should be quick.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

from evalctl.results.models import CaseResult, RunResult


class RunListener:
    """Override the events to observe; each does nothing by default."""

    def run_started(self, header: RunResult, out_dir: Path) -> None:
        """The run's header (no cases yet) and the folder its results go to."""

    def case_finished(self, case: CaseResult) -> None:
        """A case finished (all its repeats) and was journaled."""

    def confirmation(self, case: CaseResult) -> None:
        """A case was re-sampled to confirm a drop below its baseline (`run --baseline`)."""

    def run_finished(self, result: RunResult, results_path: Path) -> None:
        """results.json is written: `result` is what it holds."""

    def failed(self, event: str, error: Exception) -> None:
        """One of this listener's events raised `error`; the run goes on regardless."""


class RunEvents:
    """Delivers each event to every listener, in order, isolating their failures."""

    def __init__(self, listeners: Sequence[RunListener] = ()) -> None:
        self.listeners = tuple(listeners)

    def _each(self, event: str, *args: object) -> None:
        for listener in self.listeners:
            try:
                getattr(listener, event)(*args)
            except Exception as exc:  # a listener never fails the run
                with contextlib.suppress(Exception):  # nor does its failure handler
                    listener.failed(event, exc)

    def run_started(self, header: RunResult, out_dir: Path) -> None:
        self._each("run_started", header, out_dir)

    def case_finished(self, case: CaseResult) -> None:
        self._each("case_finished", case)

    def confirmation(self, case: CaseResult) -> None:
        self._each("confirmation", case)

    def run_finished(self, result: RunResult, results_path: Path) -> None:
        self._each("run_finished", result, results_path)
