"""A case's status words and which of them were scored: the one definition that the result
models and the version table (which upgrades old files before they become models) share."""

from __future__ import annotations

from typing import Final, Literal

CaseStatus = Literal["pass", "fail", "error", "skipped", "flaky"]
# A case status that was scored: it stands for at least one scored sample (an attempt is
# never flaky, a case of several is: the one set serves both).
SCORED: Final[frozenset[CaseStatus]] = frozenset({"pass", "fail", "flaky"})
