"""Building, refusing, merging, writing and reading baselines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalctl.baselines.model import Baseline, read_baseline
from evalctl.baselines.write import (
    baseline_path,
    build_baseline,
    merge_baseline,
    skipped_cases,
    write_baseline,
)
from evalctl.errors import BadInputError, ExitCode, GateFailedError
from evalctl.results.io import write_run
from tests import factories as f


def _mixed() -> list[Any]:
    return [
        f.case("s/b", "fail"),
        f.case("s/a", "pass"),
        f.case("s/c", "flaky"),
        f.case("s/d", "pass"),
        f.case("t/skip", "skipped", skip_reason="provider lacks 'tools'"),
    ]


# ------------------------------------------------------------------ build


def test_build_records_scored_cases_sorted_and_leaves_out_skipped() -> None:
    run = f.run(_mixed(), provider="local", model="smollm2", model_sha256="ab" * 32)
    b = build_baseline(run)
    assert list(b.baselines.items()) == [
        ("s/a", "pass"),
        ("s/b", "fail"),
        ("s/c", "flaky"),
        ("s/d", "pass"),
    ]
    assert (b.provider, b.model, b.model_sha256) == ("local", "smollm2", "ab" * 32)
    assert b.source_run_id == run.run_id
    assert b.created_at and b.evalctl_version
    assert skipped_cases(run) == ["t/skip"]


def test_refuses_below_the_pass_rate_with_the_numbers() -> None:
    run = f.run([f.case("s/a", "pass")] + [f.case(f"s/f{i}", "fail") for i in range(3)])
    with pytest.raises(GateFailedError) as exc:
        build_baseline(run)
    assert exc.value.code == ExitCode.GATE_FAILED
    assert "only 1 of 4 scored cases passed (25%)" in exc.value.message
    assert "minimum of 50%" in exc.value.message


def test_exactly_at_the_bar_is_accepted_and_the_bar_is_configurable() -> None:
    run = f.run([f.case("s/a"), f.case("s/b"), f.case("s/c", "fail"), f.case("s/d", "fail")])
    assert len(build_baseline(run).baselines) == 4
    with pytest.raises(GateFailedError, match=r"2 of 4 .* minimum of 75%"):
        build_baseline(run, min_pass_rate=0.75)
    low = f.run([f.case("s/a"), *(f.case(f"s/f{i}", "fail") for i in range(4))])
    assert len(build_baseline(low, min_pass_rate=0.2).baselines) == 5


def test_flaky_counts_as_scored_but_not_passed() -> None:
    run = f.run([f.case("s/a"), f.case("s/b", "flaky"), f.case("s/c", "flaky")])
    with pytest.raises(GateFailedError, match=r"1 of 3 .*\(33.3%\)"):
        build_baseline(run)


def test_any_infrastructure_error_refuses_even_when_everything_else_passes() -> None:
    run = f.run([*(f.case(f"s/p{i}") for i in range(9)), f.case("s/boom", "error")])
    with pytest.raises(GateFailedError) as exc:
        build_baseline(run, min_pass_rate=0.0)
    assert "1 case ended in an infrastructure error (s/boom)" in exc.value.message


def test_many_errors_are_listed_briefly() -> None:
    run = f.run([f.case(f"s/e{i}", "error") for i in range(8)])
    with pytest.raises(GateFailedError, match=r"8 cases .*s/e4 and 3 more"):
        build_baseline(run)


def test_interrupted_and_unscored_runs_are_refused() -> None:
    with pytest.raises(GateFailedError, match="interrupted"):
        build_baseline(f.run([f.case("s/a")], interrupted=True))
    with pytest.raises(GateFailedError, match="no scored cases"):
        build_baseline(f.run([f.case("s/a", "skipped")]))


def test_pass_rate_bar_must_be_a_fraction() -> None:
    with pytest.raises(BadInputError) as exc:
        build_baseline(f.run([f.case("s/a")]), min_pass_rate=50)
    assert exc.value.field == "--min-pass-rate"


# ------------------------------------------------------------------ merge (narrowed runs)


def test_narrowed_run_replaces_only_what_it_selected() -> None:
    existing = f.baseline({"s/a": "pass", "s/gone": "pass", "t/x": "fail", "t/y": "pass"})
    run = f.run([f.case("s/a", "fail"), f.case("s/new")], suite_filter=["s"])
    merged, kept = merge_baseline(existing, build_baseline(run), run)
    # s/gone was selectable and did not run: it is dropped; suite t was not selected: kept.
    assert merged.baselines == {"s/a": "fail", "s/new": "pass", "t/x": "fail", "t/y": "pass"}
    assert kept == 2


def test_case_glob_scope_matches_id_or_key() -> None:
    existing = f.baseline({"s/alpha": "fail", "s/beta": "pass", "t/alpha": "fail"})
    run = f.run([f.case("s/alpha"), f.case("t/alpha")], case_glob="al*")
    merged, kept = merge_baseline(existing, build_baseline(run), run)
    assert merged.baselines == {"s/alpha": "pass", "s/beta": "pass", "t/alpha": "pass"}
    assert kept == 1


def test_merge_refuses_another_model() -> None:
    existing = f.baseline({"s/a": "pass"}, model="other")
    run = f.run([f.case("s/a")], suite_filter=["s"])
    with pytest.raises(BadInputError, match="cannot be merged"):
        merge_baseline(existing, build_baseline(run), run)


# ------------------------------------------------------------------ write and read


def test_write_then_read_round_trips_in_the_familiar_shape(tmp_path: Path) -> None:
    b = build_baseline(f.run(_mixed(), provider="local"))
    path = write_baseline(b, baseline_path(tmp_path / "baselines", "local"))
    assert path == tmp_path / "baselines" / "local.json"
    assert read_baseline(path) == b
    data = json.loads(path.read_text())
    assert {"schema_version", "provider", "model", "baselines"} <= data.keys()
    assert data["baselines"]["s/c"] == "flaky"


def test_provider_names_cannot_escape_the_directory(tmp_path: Path) -> None:
    for name in ("../evil", "a/b", ".hidden", ""):
        with pytest.raises(BadInputError):
            baseline_path(tmp_path, name)


def test_hand_written_minimal_baseline_reads(tmp_path: Path) -> None:
    path = f.write_json(
        tmp_path / "local.json",
        {"schema_version": 1, "provider": "local", "model": "m", "baselines": {"s/a": "pass"}},
    )
    assert read_baseline(path).baselines == {"s/a": "pass"}


def _bad(path: Path) -> BadInputError:
    with pytest.raises(BadInputError) as exc:
        read_baseline(path)
    assert exc.value.file == str(path)
    return exc.value


def _valid() -> dict[str, Any]:
    return f.baseline({"s/a": "pass", "s/b": "fail"}).model_dump()


def test_unknown_key_names_the_field(tmp_path: Path) -> None:
    data = _valid() | {"threshold": 0.5}
    err = _bad(f.write_json(tmp_path / "b.json", data))
    assert err.field == "threshold"
    assert err.message.endswith("unknown key")


def test_bad_status_names_the_case(tmp_path: Path) -> None:
    data = _valid()
    data["baselines"]["s/b"] = "error"
    err = _bad(f.write_json(tmp_path / "b.json", data))
    assert (err.case_id, err.field) == ("s/b", "baselines")
    assert "'error'" in err.message


def test_malformed_case_key(tmp_path: Path) -> None:
    data = _valid()
    data["baselines"]["no-suite"] = "pass"
    err = _bad(f.write_json(tmp_path / "b.json", data))
    assert err.field == "baselines"
    assert "'no-suite' is not a case key" in err.message


def test_results_given_where_a_baseline_is_expected(tmp_path: Path) -> None:
    results = write_run(f.run([f.case("s/a")]), tmp_path / "run")
    err = _bad(results)
    assert err.field == "kind"
    assert "this is run results, expected a baseline" in err.message


def test_truncated_and_future_baselines(tmp_path: Path) -> None:
    path = write_baseline(f.baseline({"s/a": "pass"}), tmp_path / "b.json")
    text = path.read_text()
    path.write_text(text[: len(text) - 10])
    assert "truncated JSON" in _bad(path).message
    f.write_json(path, _valid() | {"schema_version": 4})
    err = _bad(path)
    assert err.field == "schema_version" and "reads version 1" in err.message


def test_missing_baseline_file(tmp_path: Path) -> None:
    assert "no such file" in _bad(tmp_path / "local.json").message


def test_baseline_rejects_wrong_types(tmp_path: Path) -> None:
    data = _valid() | {"provider": 7}
    err = _bad(f.write_json(tmp_path / "b.json", data))
    assert err.field == "provider"
    assert isinstance(Baseline.model_validate(_valid()), Baseline)


def test_the_bar_a_baseline_cleared_is_recorded_and_merges_to_the_laxest() -> None:
    from evalctl.baselines.write import build_baseline, merge_baseline
    from tests.factories import case, run

    low = run([case("a/one", "pass"), case("a/two", "fail"), case("a/three", "fail")])
    lowered = build_baseline(low, min_pass_rate=0.2)
    assert lowered.min_pass_rate == 0.2
    assert '"min_pass_rate":0.2' in lowered.model_dump_json()
    strict_run = run([case("b/one", "pass")], suite_filter=["b"])
    merged, _ = merge_baseline(lowered, build_baseline(strict_run), strict_run)
    assert merged.min_pass_rate == 0.2
    assert set(merged.baselines) == {"a/one", "a/two", "a/three", "b/one"}
