"""The committed local results, re-scored from their transcripts with today's scoring, keep
every check's status, expected, actual and message: a change to scoring that would move a
shipped suite's statuses shows here, without the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalctl.cases.loader import load_suite
from evalctl.config import Settings
from evalctl.plugin_loader import get_check, get_kind
from evalctl.results.io import read_run
from evalctl.scoring.check import Transcript, scoring_context
from evalctl.scoring.score import score_case
from evalctl.scoring.verdict import attempt_verdict
from evalctl.tools.base import ToolContext

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "baselines" / "local.results"


@pytest.mark.parametrize(
    "suite_name", ["asset-triage", "release-assets", "sommelier", "sommelier-retrieval"]
)
def test_committed_results_rescore_the_same(suite_name: str) -> None:
    run = read_run(RESULTS / f"{suite_name}.json")
    suite = load_suite(REPO / "cases" / f"{suite_name}.toml")
    kind = get_kind(suite.table.kind)
    assert kind is not None
    cases = {c.key: c for c in suite.cases}
    scored = [c for c in run.cases if c.status in ("pass", "fail")]
    assert scored, "the committed results hold scored cases"
    for recorded in scored:
        case = cases[recorded.key]
        replies = [turn.reply for turn in recorded.transcript if turn.reply is not None]
        tools = ToolContext(case, suite.directory / "fixtures", Settings())
        transcript = Transcript([], replies, recorded.tool_calls)
        ctx = scoring_context(case, suite.table, transcript, tools=tools)
        checks = score_case(ctx, kind.checks, get_check)
        assert [c.model_dump() for c in checks] == [c.model_dump() for c in recorded.checks]
        assert attempt_verdict(checks, case.threshold).status == recorded.status
