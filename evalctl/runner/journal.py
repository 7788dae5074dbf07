"""Append-only journal of finished cases: a killed run loses at most the case in flight.

Every write holds an exclusive flock on the journal file itself: concurrent workers (threads
here, or a second process that got past the run directory's lock) each add whole lines, and
the repair that cuts a torn last line reads and truncates under the same lock, so it never
cuts a line another writer is adding.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError

from evalctl import userfiles
from evalctl.errors import BadInputError
from evalctl.results.models import CaseResult
from evalctl.secrets import redact


@contextlib.contextmanager
def _locked(fh: BinaryIO) -> Iterator[BinaryIO]:
    # flock belongs to the open file description: two opens in one process exclude each
    # other as two processes do. Closing the file drops it.
    fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
    yield fh


class Journal:
    def __init__(self, path: Path):
        self.path = path

    def append(self, case: CaseResult) -> None:
        line = (redact(case.model_dump_json()) + "\n").encode("utf-8")
        try:
            with self.path.open("ab") as raw, _locked(raw) as fh:
                # One write of the whole line: a text file would split a long one into
                # buffer-sized writes.
                view = memoryview(line)
                while view:
                    view = view[os.write(fh.fileno(), view) :]
                os.fsync(fh.fileno())
        except OSError as exc:
            # A full disk or a read-only mount is the machine's fault, not the run's: say so.
            error = userfiles.environment_error(exc, "append to the journal", self.path)
            if error is None:
                raise
            raise error from None

    def repair(self) -> None:
        """Cut a last line left half-written by a kill, so new lines start on a line of their
        own. (`read` skips such a line anyway; appending after it would glue the next case
        onto it and lose that case too.)"""
        try:
            with self.path.open("rb+") as raw, _locked(raw) as fh:
                data = fh.read()  # re-read under the lock: the tail may have grown
                if not data or data.endswith(b"\n"):
                    return
                fh.truncate(data.rfind(b"\n") + 1)
                fh.flush()
                os.fsync(fh.fileno())
        except FileNotFoundError:
            return
        except IsADirectoryError:
            raise BadInputError(
                "is a directory, expected the run's journal", file=str(self.path)
            ) from None

    def read(self) -> list[CaseResult]:
        """The journaled cases. A last line without its newline is the case a kill cut short
        and is dropped; any other line that does not parse is damage, refused with its line
        number rather than silently run again."""
        if not self.path.exists():
            return []
        raw = userfiles.read_bytes(self.path, what="journal")
        lines = raw.split(b"\n")
        complete, partial = lines[:-1], lines[-1]
        cases = []
        for number, line in enumerate(complete, start=1):
            try:
                cases.append(CaseResult.model_validate_json(line))
            except ValidationError as exc:
                # Also not UTF-8 and nested too deep: pydantic reads the bytes itself.
                why = exc.errors()[0]["msg"]
                raise BadInputError(
                    f"line {number} is damaged ({why})",
                    file=str(self.path),
                    hint=f"delete line {number} to run that case again, or start a new run",
                ) from None
        if partial:
            # A kill mid-write: the case in flight, run again on resume.
            with contextlib.suppress(ValidationError):
                cases.append(CaseResult.model_validate_json(partial))
        return cases
