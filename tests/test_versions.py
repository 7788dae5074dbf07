"""Old files are upgraded once, when read (evalctl/results/versions.py): every committed file of
an older shape (tests/data/old/, see its README) reads at the current version, and gates as it
did, whether read as it is or written again at the current version and read back."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalctl.baselines.comparison import Comparison
from evalctl.baselines.gate import compare_baseline
from evalctl.baselines.model import Baseline, read_baseline
from evalctl.baselines.write import write_baseline
from evalctl.errors import BadInputError
from evalctl.results.io import read_run, write_run
from evalctl.results.models import RunResult
from evalctl.results.scores import read_scores
from evalctl.results.versions import (
    BASELINE_VERSION,
    RUN_VERSION,
    VERSIONS,
    supported,
    upgrade,
)
from tests import factories as f

OLD = Path(__file__).resolve().parent / "data" / "old"
RESULTS = {
    1: OLD / "results-v1-asset-triage.json",
    2: OLD / "results-v2-asset-triage.json",
    3: OLD / "results-v3-before-driven-by.json",
}
BASELINES = {
    1: OLD / "baseline-v1.json",
    2: OLD / "baseline-v2.json",
    3: OLD / "baseline-v3-suite-figures.json",
}


def _raw(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def test_the_table_names_every_older_version_once() -> None:
    assert supported("run") == (1, 2, RUN_VERSION) == (1, 2, 3)
    assert supported("baseline") == (1, 2, BASELINE_VERSION) == (1, 2, 3)
    for kind in ("soak", "crash-test", "matrix"):
        assert supported(kind) == (1,)
    # Each older version has one step to the next, and the current version none.
    for schema in VERSIONS.values():
        assert sorted(schema.steps) == list(range(1, schema.current))


@pytest.mark.parametrize("version", sorted(RESULTS))
def test_old_results_read_at_the_current_version(version: int, tmp_path: Path) -> None:
    path = RESULTS[version]
    assert _raw(path)["schema_version"] == version
    run = read_run(path)
    assert run.schema_version == RUN_VERSION
    # Written again, it reads back the same: the upgrade is complete.
    assert read_run(write_run(run, tmp_path)) == run
    # `compare`'s fast reader reads it as the general reader does.
    fast = read_scores(path)
    assert fast is not None and fast.cases
    assert [c.status for c in fast.cases] == [c.status for c in run.cases]


def test_a_version_1_check_gets_its_status_from_passed() -> None:
    raw = _raw(RESULTS[1])
    run = read_run(RESULTS[1])
    for case, written in zip(run.cases, raw["cases"], strict=True):
        assert [c.status for c in case.checks] == [
            "pass" if c["passed"] else "fail" for c in written["checks"]
        ]
    # The same run at version 2 recorded the same statuses.
    assert [c.checks for c in run.cases] == [c.checks for c in read_run(RESULTS[2]).cases]


def test_a_version_2_files_max_tokens_reads_as_the_per_suite_table() -> None:
    assert _raw(RESULTS[2])["settings"]["max_tokens"] is None
    assert read_run(RESULTS[2]).settings.max_tokens == {}


def test_a_retrieval_case_from_before_driven_by_reads_as_driven_by_its_tools() -> None:
    raw = _raw(RESULTS[3])
    assert all("driven_by" not in c for c in raw["cases"])
    run = read_run(RESULTS[3])
    # Tools ran, yet no attempt took a model turn: its kind drove it.
    assert run.cases and all(c.tool_calls for c in run.cases)
    assert all(a.turns == 0 for c in run.cases for a in c.attempts)
    assert {c.driven_by for c in run.cases} == {"tools"}


def test_a_scored_case_without_attempts_reads_as_one_sample(tmp_path: Path) -> None:
    data = json.loads(
        write_run(f.run([f.case("s/a", "pass"), f.case("s/b", "skipped")]), tmp_path).read_text()
    )
    for case in data["cases"]:
        del case["attempts"]
    path = f.write_json(tmp_path / "hand.json", data)
    run = read_run(path)
    a, b = run.cases
    assert a.pass_counts() == (1, 1) and a.attempts[0].latency_ms == a.latency_ms
    assert b.attempts == []  # a skipped case was never scored
    assert read_scores(path) == run


def test_upgrade_changes_nothing_it_is_given() -> None:
    raw = _raw(RESULTS[1])
    before = json.dumps(raw, sort_keys=True)
    upgraded = upgrade("run", raw)
    assert upgraded["schema_version"] == RUN_VERSION
    assert json.dumps(raw, sort_keys=True) == before


@pytest.mark.parametrize("version", sorted(BASELINES))
def test_old_baselines_read_at_the_current_version(version: int, tmp_path: Path) -> None:
    path = BASELINES[version]
    assert _raw(path)["schema_version"] == version
    baseline = read_baseline(path)
    assert baseline.schema_version == BASELINE_VERSION
    assert baseline.written_as == version
    again = read_baseline(write_baseline(baseline, tmp_path / "b.json"))
    assert again.model_dump() == baseline.model_dump()
    assert again.written_as == BASELINE_VERSION
    assert (baseline.checks == {}) == (version == 1)


def _verdict(cmp: Comparison) -> dict[str, Any]:
    """A comparison's verdict: every category, the figures and the exit code; the warnings
    apart (a version 1 baseline says it has no check outcomes)."""
    data = cmp.model_dump(mode="json", exclude={"warnings"})
    return {"exit": int(cmp.exit_code), **data}


@pytest.mark.parametrize(("baseline", "results"), [(1, 1), (2, 2), (3, 3), (1, 2), (2, 1)])
def test_old_files_gate_as_they_do_written_again(
    baseline: int, results: int, tmp_path: Path
) -> None:
    old = read_baseline(BASELINES[baseline])
    run = read_run(RESULTS[results])
    cmp = compare_baseline(old, run)
    rewritten = read_baseline(write_baseline(old, tmp_path / "b.json"))
    again: RunResult = read_run(write_run(run, tmp_path / "run"))
    assert _verdict(compare_baseline(rewritten, again)) == _verdict(cmp)
    assert any("schema_version 1" in w for w in cmp.warnings) == (baseline == 1)


def test_the_v2_baseline_gates_its_own_run_as_it_did() -> None:
    # The schema 2 baseline and the schema 2 run of its day: the asset-triage cases it holds
    # compare without a regression.
    cmp = compare_baseline(read_baseline(BASELINES[2]), read_run(RESULTS[2]))
    assert cmp.regressions == [] and cmp.check_regressions == []
    assert int(cmp.exit_code) == 0


def test_a_baseline_claiming_an_old_version_with_newer_keys_is_refused(tmp_path: Path) -> None:
    data = _raw(BASELINES[3]) | {"schema_version": 2}
    with pytest.raises(BadInputError, match="needs schema_version 3") as err:
        read_baseline(f.write_json(tmp_path / "b.json", data))
    assert err.value.file == str(tmp_path / "b.json")
    with pytest.raises(ValueError, match="checks needs schema_version 2"):
        Baseline.model_validate(_raw(BASELINES[2]) | {"schema_version": 1})


@pytest.mark.parametrize("reader", [read_run, read_baseline])
def test_a_newer_version_is_refused_naming_the_file(reader: Any, tmp_path: Path) -> None:
    source = RESULTS[2] if reader is read_run else BASELINES[2]
    path = f.write_json(tmp_path / "new.json", _raw(source) | {"schema_version": 4})
    with pytest.raises(BadInputError, match="unsupported schema_version 4") as err:
        reader(path)
    assert err.value.file == str(path) and err.value.field == "schema_version"
    assert err.value.hint and "newer evalctl" in err.value.hint
