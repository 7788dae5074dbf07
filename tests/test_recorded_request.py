"""The RunRequest is the one description of a run's settings: the manifest's selection and
the results' settings are projections of it, and a resume rebuilds it from them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from evalctl.results.models import RunSettings, SampleSettings, Shard
from evalctl.runner.api import RunRequest
from evalctl.runner.recorded import (
    FROM_THE_RUN,
    PER_SHARD,
    RECORDED,
    Selection,
    request_of,
    run_settings,
    selection_of,
    settings_field,
    shard_shared,
)


def test_every_request_field_is_placed() -> None:
    assert set(RECORDED) == {f.name for f in dataclasses.fields(RunRequest)}


def test_every_results_setting_is_placed() -> None:
    # A RunSettings field is a recorded request field or one the run makes, never neither:
    # so the shards' merge (shard_shared) knows whether the shards must agree on it.
    from_request = {
        settings_field(name) for name, where in RECORDED.items() if where in ("settings", "both")
    }
    assert not from_request & set(FROM_THE_RUN)
    assert from_request | set(FROM_THE_RUN) == set(RunSettings.model_fields)
    shard_parts = {f"shard.{part}" for part in Shard.model_fields}
    assert set(RunSettings.model_fields) | shard_parts >= PER_SHARD


def test_a_new_recorded_field_is_one_the_shards_share() -> None:
    shared = shard_shared()
    assert "settings.prompt_template" in shared and "settings.feature_filter" in shared
    assert "settings.shard.count" in shared and "settings.shard.index" not in shared
    assert "settings.seed_base" not in shared and "settings.confirm" not in shared
    # Placed in RECORDED, a field is checked by the merge with no other change.
    for where in ("settings", "both"):
        grown = shard_shared({**RECORDED, "new_flag": where})
        assert set(grown) - set(shared) == {"settings.new_flag"}
    for where in ("selection", "manifest", "not recorded"):
        assert shard_shared({**RECORDED, "new_flag": where}) == shared


def test_the_request_is_frozen() -> None:
    request = RunRequest()
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.repeats = 3  # type: ignore[misc]


def _settings(request: RunRequest) -> RunSettings:
    return run_settings(
        request,
        default_timeout_s=120.0,
        shard_selection=["s/a"],
        suites=["s"],
        suite_versions={"s": "1"},
        suite_filter=["s"],
        sampling={},
        max_tokens={"s": 256},
        sampled={"s": SampleSettings(samples=request.repeats)} if request.sampled else {},
        gates={},
        gate_rules={},
    )


@pytest.mark.parametrize("restart_per_case", [False, True])
def test_a_resume_rebuilds_the_recorded_request(tmp_path: Path, restart_per_case: bool) -> None:
    request = RunRequest(
        provider="scripted",
        model="m",
        script=tmp_path / "replies.toml",
        paths=[tmp_path / "cases"],
        suites=["s"],
        case_glob="a*",
        limit=3,
        features=["f"],
        meta={"k": "v"},
        out_dir=tmp_path / "out",
        repeats=4,
        sampled=True,
        timeout_s=30.0,
        crash_retries=2,
        shard=(1, 2),
        restart_per_case=restart_per_case,
        cooldown_s=1.5 if restart_per_case else 0.0,
        temperature=0.7,
        seed=None,
        prompt_template="Please, {{ prompt }}",
        seed_base=1_000_123,
    )
    selection = selection_of(request, "scripted")
    settings = _settings(request)
    again = request_of(
        Selection.model_validate_json(selection.model_dump_json()),
        settings,
        tmp_path / "out",
    )
    for name, where in RECORDED.items():
        if where != "not recorded":
            assert getattr(again, name) == getattr(request, name), name
    assert again.resume and again.out_dir == tmp_path / "out"


def test_the_results_record_the_timeout_the_run_resolved() -> None:
    settings = _settings(RunRequest())
    assert settings.timeout_s == 120.0
    assert selection_of(RunRequest(), "echo").timeout_s is None
