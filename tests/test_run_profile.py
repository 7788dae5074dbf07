"""benchmarks/bench_run_profile.py's reading of a run: which turns were decoded under a grammar
and what each class of work adds up to, on the committed local results (no model runs here;
the rates it compares with are measured by the benchmark itself)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_run_profile import main, profile  # noqa: E402

RESULTS = REPO / "baselines" / "local.results"


def _load(name: str) -> dict[str, Any]:
    data = json.loads((RESULTS / name).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _turns(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for c in data["cases"] for t in c["transcript"] if t.get("reply")]


def test_answers_under_the_suites_schema_are_constrained() -> None:
    data = _load("asset-triage.json")
    run = profile(data)
    turns = _turns(data)
    # asset-triage offers no tools ("none"): only its output schema constrains it.
    assert turns and {t["tool_choice"] for t in turns} == {"none"}
    assert run.free.tokens == 0 and run.free.turns == 0
    assert run.constrained.turns == len(turns)
    assert run.constrained.tokens == sum(t["reply"]["usage"]["output_tokens"] for t in turns)


def test_forced_tool_calls_are_constrained_and_free_turns_are_not() -> None:
    data = _load("sommelier.json")
    run = profile(data)
    turns = _turns(data)
    forced = [t for t in turns if t["tool_choice"] not in ("auto", "none")]
    free = [t for t in turns if t["tool_choice"] in ("auto", "none")]
    assert forced and free
    assert run.constrained.turns == len(forced)
    assert run.free.turns == len(free)
    assert run.free.tokens == sum(t["reply"]["usage"]["output_tokens"] for t in free)


def test_prefill_and_model_time_add_up_over_every_turn() -> None:
    data = _load("release-assets.json")
    run = profile(data)
    turns = _turns(data)
    usage = [t["reply"]["usage"] for t in turns]
    assert run.prefill.tokens == sum(u["input_tokens"] - u["cached_input_tokens"] for u in usage)
    assert run.cached == sum(u["cached_input_tokens"] for u in usage)
    total = sum(t["reply"]["timings"]["total_ms"] for t in turns) / 1000
    assert abs(run.model_s - total) < 1e-6
    # Prefill and decode split each turn's time between them.
    assert abs(run.prefill.seconds + run.free.seconds + run.constrained.seconds - total) < 1e-6
    # A sampled baseline's results: the repeats' turns are not in the transcripts, and counted.
    assert run.other_attempts > 0 and run.wall_s is not None and run.wall_s > 0


def test_a_retrieval_run_asks_no_model() -> None:
    run = profile(_load("sommelier-retrieval.json"))
    assert run.prefill.turns == 0 and run.model_s == 0 and run.other_attempts == 0


def test_without_results_it_says_how_to_make_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["bench_run_profile.py", str(tmp_path / "results.json")])
    assert main() == 0
    assert "make run" in capsys.readouterr().out
