"""Scoring a transcript outside a run, the way the runner does: one `ScoringContext`, the
kind's named checks, or every check of a case."""

from __future__ import annotations

from typing import Any

from evalctl.cases.schema import Case, SuiteTable
from evalctl.plugin_loader import get_check
from evalctl.results.models import CheckResult
from evalctl.scoring.check import ScoringContext, Transcript, scoring_context
from evalctl.scoring.kinds import SuiteKind
from evalctl.scoring.score import kind_results, score_case
from evalctl.tools.base import ToolContext


def context(
    case: Case, transcript: Transcript, suite: SuiteTable | None = None, **more: Any
) -> ScoringContext:
    """The context the runner would build; `more`: judge, resources, tools."""
    table = suite or SuiteTable(name=case.suite, kind="assert")
    return scoring_context(case, table, transcript, **more)


def score_kind(
    kind: SuiteKind, case: Case, transcript: Transcript, *, tools: ToolContext | None = None
) -> list[CheckResult]:
    """The kind's named checks the case selects."""
    return kind_results(context(case, transcript, None, tools=tools), kind.checks)


def score_all(
    kind: SuiteKind,
    case: Case,
    transcript: Transcript,
    *,
    suite: SuiteTable | None = None,
    **services: Any,
) -> list[CheckResult]:
    """Every check of the case: the kind's, `output_schema`, the assertions."""
    return score_case(context(case, transcript, suite, **services), kind.checks, get_check)
