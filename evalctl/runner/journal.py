"""Append-only journal of finished cases: a killed run loses at most the case in flight."""

from __future__ import annotations

import os
from pathlib import Path

from evalctl.results.models import CaseResult
from evalctl.secrets import redact


class Journal:
    def __init__(self, path: Path):
        self.path = path

    def append(self, case: CaseResult) -> None:
        line = redact(case.model_dump_json()) + "\n"
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def read(self) -> list[CaseResult]:
        if not self.path.exists():
            return []
        cases = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            # A line cut short by a kill is the case that was in flight: drop it.
            try:
                cases.append(CaseResult.model_validate_json(line))
            except ValueError:
                continue
        return cases
