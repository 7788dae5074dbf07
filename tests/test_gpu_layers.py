"""The `gpu_layers` setting: where it comes from (flag, environment, evalctl.toml), what the
daemon asks llama.cpp for, and what it reports as really offloaded."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from evalctl.config import Settings, load_settings
from evalctl.errors import BadInputError
from evalctl.providers import registry
from evalctl.providers.local import LocalProvider
from evalctl.server.hardware import default_gpu_layers, gpu_offload_supported, offloaded_layers
from evalctl.server.options import DaemonOptions, parse_argv
from tests.local_helpers import make_provider, reap_daemons  # noqa: F401  (fixture)


def test_offloaded_layers_counts_blocks_and_the_output_layer() -> None:
    assert offloaded_layers(-1, 30, supported=True) == 31
    assert offloaded_layers(10, 30, supported=True) == 10
    assert offloaded_layers(99, 30, supported=True) == 31
    assert offloaded_layers(0, 30, supported=True) == 0
    # A CPU-only build offloads nothing, whatever it was asked.
    assert offloaded_layers(-1, 30, supported=False) == 0


def test_the_default_is_every_layer_only_where_the_build_can_offload() -> None:
    assert default_gpu_layers(5) == 5
    assert default_gpu_layers(0) == 0
    assert default_gpu_layers(None) == (-1 if gpu_offload_supported() else 0)


def test_the_daemon_flag_round_trips() -> None:
    options = DaemonOptions(model_path=os.devnull, socket_path="/tmp/s.sock", n_gpu_layers=-1)  # type: ignore[arg-type]
    assert parse_argv(options.to_argv()).n_gpu_layers == -1
    assert parse_argv(DaemonOptions(os.devnull, "/tmp/s.sock").to_argv()).n_gpu_layers is None  # type: ignore[arg-type]


def _created(settings: Settings, env: dict[str, str]) -> LocalProvider:
    options = registry.ProviderOptions(settings=settings, env=env)
    provider = registry.create("local", options)
    assert isinstance(provider, LocalProvider)
    return provider


@pytest.fixture
def base_env() -> Iterator[dict[str, str]]:
    yield {k: v for k, v in os.environ.items() if k != "EVALCTL_LOCAL_GPU_LAYERS"}


def test_the_environment_wins_over_evalctl_toml(base_env: dict[str, str]) -> None:
    settings = load_settings(env=base_env).model_copy(update={"local_gpu_layers": 4})
    from_toml = _created(settings, base_env)
    from_env = _created(settings, {**base_env, "EVALCTL_LOCAL_GPU_LAYERS": "-1"})
    default = _created(load_settings(env=base_env), base_env)
    try:
        assert from_toml.manager.spec.n_gpu_layers == 4
        assert from_env.manager.spec.n_gpu_layers == -1
        assert default.manager.spec.n_gpu_layers is None  # the daemon decides
    finally:
        for provider in (from_toml, from_env, default):
            provider.close()


@pytest.mark.parametrize("value", ["-2", "all"])
def test_a_bad_value_is_bad_input(base_env: dict[str, str], value: str) -> None:
    with pytest.raises(BadInputError) as info:
        _created(load_settings(env=base_env), {**base_env, "EVALCTL_LOCAL_GPU_LAYERS": value})
    assert "EVALCTL_LOCAL_GPU_LAYERS" in str(info.value) + (info.value.hint or "")


@pytest.mark.model
def test_the_daemon_reports_the_layers_it_really_offloaded(reap_daemons: None) -> None:  # noqa: F811
    provider = make_provider(n_gpu_layers=-1)
    try:
        status = provider.ensure_running()
        # Asked for every layer: a CPU-only build offloads none, a GPU build all of them.
        if status.gpu_offload_supported:
            assert status.n_gpu_layers > 0
        else:
            assert status.n_gpu_layers == 0
        settings = provider.run_settings()
        assert settings["gpu_layers"] == status.n_gpu_layers
        assert settings["gen_tokens_per_s"] > 0  # the warm-up measured it
        assert provider.platform_info()["gpu_layers"] == status.n_gpu_layers
    finally:
        provider.stop_daemon(grace_s=2)
        provider.close()
