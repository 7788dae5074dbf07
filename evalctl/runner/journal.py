"""Append-only journal of finished cases: a killed run loses at most the case in flight."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from pydantic import ValidationError

from evalctl import userfiles
from evalctl.errors import BadInputError
from evalctl.results.models import CaseResult
from evalctl.secrets import redact


class Journal:
    def __init__(self, path: Path):
        self.path = path

    def append(self, case: CaseResult) -> None:
        line = redact(case.model_dump_json()) + "\n"
        try:
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            # A full disk or a read-only mount is the machine's fault, not the run's: say so.
            error = userfiles.environment_error(exc, "append to the journal", self.path)
            if error is None:
                raise
            raise error from None

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
