"""Prompt-evaluation threads (`threads_batch`) apart from generation's: where the count comes
from (flag, environment, evalctl.toml), that unset it is generation's count, and that the
daemon reports, and a run records, what llama.cpp really used."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalctl.config import Settings, load_settings
from evalctl.errors import BadInputError
from evalctl.providers import registry
from evalctl.providers.local import LocalProvider
from evalctl.results.platform import Platform, platform_diff
from evalctl.server.engine import Engine, EngineConfig
from evalctl.server.options import DaemonOptions, parse_argv
from tests.local_helpers import embedded_model, make_provider, reap_daemons  # noqa: F401

VARS = ("EVALCTL_LOCAL_THREADS", "EVALCTL_LOCAL_THREADS_BATCH")


def test_the_daemon_flag_round_trips() -> None:
    options = DaemonOptions(Path(os.devnull), Path("/tmp/s.sock"), n_threads_batch=3)
    assert "--threads-batch" in options.to_argv()
    assert parse_argv(options.to_argv()).n_threads_batch == 3
    unset = DaemonOptions(Path(os.devnull), Path("/tmp/s.sock"), n_threads=2)
    assert "--threads-batch" not in unset.to_argv()
    assert parse_argv(unset.to_argv()).n_threads_batch is None


@pytest.fixture
def base_env() -> Iterator[dict[str, str]]:
    yield {k: v for k, v in os.environ.items() if k not in VARS}


def _created(settings: Settings, env: dict[str, str]) -> LocalProvider:
    provider = registry.create("local", registry.ProviderOptions(settings=settings, env=env))
    assert isinstance(provider, LocalProvider)
    return provider


def test_the_environment_wins_over_evalctl_toml(base_env: dict[str, str]) -> None:
    settings = load_settings(env=base_env).model_copy(update={"local_threads_batch": 4})
    from_toml = _created(settings, base_env)
    from_env = _created(settings, {**base_env, "EVALCTL_LOCAL_THREADS_BATCH": "2"})
    default = _created(load_settings(env=base_env), {**base_env, "EVALCTL_LOCAL_THREADS": "3"})
    try:
        assert from_toml.manager.spec.n_threads_batch == 4
        assert from_env.manager.spec.n_threads_batch == 2
        assert default.manager.spec.n_threads_batch is None  # as many as generation
        # Recorded before the daemon starts too: unset, it is generation's count.
        assert default.run_settings()["threads_batch"] == 3
        assert default.run_settings()["threads_batch_from"] == "default: threads"
        assert from_env.run_settings()["threads_batch_from"] == "setting"
    finally:
        for provider in (from_toml, from_env, default):
            provider.close()


@pytest.mark.parametrize("value", ["0", "many"])
def test_a_bad_value_is_bad_input(base_env: dict[str, str], value: str) -> None:
    with pytest.raises(BadInputError) as info:
        _created(load_settings(env=base_env), {**base_env, "EVALCTL_LOCAL_THREADS_BATCH": value})
    assert "EVALCTL_LOCAL_THREADS_BATCH" in str(info.value) + (info.value.hint or "")


def test_evalctl_toml_refuses_zero_threads(tmp_path: Path) -> None:
    (tmp_path / "evalctl.toml").write_text("local_threads_batch = 0\n")
    with pytest.raises(BadInputError) as info:
        load_settings(cwd=tmp_path, env={})
    assert info.value.field == "local_threads_batch"


def test_a_changed_prompt_thread_count_is_a_platform_difference() -> None:
    before = Platform(provider="local", model="m", threads=2, threads_batch=2)
    after = Platform(provider="local", model="m", threads=2, threads_batch=8)
    assert platform_diff(before, after) == ["threads_batch: 2 -> 8"]


@pytest.mark.model
def test_the_engine_gives_prompts_their_own_count_and_else_generations() -> None:
    model = embedded_model()
    apart = Engine(EngineConfig(model.path, model.name, n_threads=1, n_threads_batch=2))
    same = Engine(EngineConfig(model.path, model.name, n_threads=2))
    for engine in (apart, same):
        engine.load()
    try:
        assert (apart.n_threads, apart.n_threads_batch) == (1, 2)
        assert (same.n_threads, same.n_threads_batch) == (2, 2)
    finally:
        apart.close()
        same.close()


@pytest.mark.model
def test_the_daemon_reports_and_the_run_records_the_prompt_threads(
    reap_daemons: None,  # noqa: F811
) -> None:
    provider = make_provider(n_threads=1, n_threads_batch=2)
    try:
        status = provider.ensure_running()
        assert (status.n_threads, status.n_threads_batch) == (1, 2)
        assert provider.run_settings()["threads_batch"] == 2
        assert provider.platform_info()["threads_batch"] == 2
    finally:
        provider.stop_daemon(grace_s=2)
        provider.close()
