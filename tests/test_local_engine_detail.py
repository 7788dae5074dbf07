"""`evalctl providers` names the local engine's backend and GPU layers: from llama.cpp's build
and the gpu_layers setting without a daemon, from the daemon serving the model when one
runs (the layers it really offloaded)."""

from __future__ import annotations

import json
import os

import pytest

from evalctl.config import Settings, load_settings
from evalctl.providers.local import LocalProvider
from evalctl.providers.local_engine import describe
from evalctl.server import hardware
from tests.cli_helpers import run_cli
from tests.local_helpers import (
    provider,  # noqa: F401  (fixture)
    reap_daemons,  # noqa: F401  (fixture)
)

CUDA_INFO = "CUDA : ARCHS = 900 | USE_GRAPHS = 1 | CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 |"


def test_backends_are_the_named_entries_of_system_info_in_order() -> None:
    assert hardware.backends(CUDA_INFO) == ["CUDA", "CPU"]
    assert hardware.backends("Metal : EMBED_LIBRARY = 1 | CPU : NEON = 1 | ARM_FMA = 1") == [
        "Metal",
        "CPU",
    ]
    assert hardware.backends("") == []


def _settings() -> Settings:
    """Defaults, in the test's own EVALCTL_HOME: a daemon left running in the user's home
    would otherwise answer for the local engine."""
    return load_settings(env={"EVALCTL_HOME": os.environ["EVALCTL_HOME"]})


def test_without_a_daemon_the_build_and_its_offload_are_shown() -> None:
    text = describe(_settings(), env={})
    build = hardware.backends(hardware.system_info())
    assert text.startswith(f"backend {', '.join(build)};")
    if hardware.gpu_offload_supported():
        assert text.endswith("offloads every layer (default)")
    else:
        assert text.endswith("no GPU offload in this build")


@pytest.mark.parametrize(
    ("env", "toml", "expected"),
    [
        ({}, None, "offloads every layer (default)"),
        ({"EVALCTL_LOCAL_GPU_LAYERS": "12"}, 4, "offloads 12 layers (gpu_layers)"),
        ({}, 4, "offloads 4 layers (gpu_layers)"),
        ({}, -1, "offloads every layer (gpu_layers -1)"),
        ({"EVALCTL_LOCAL_GPU_LAYERS": "all"}, None, "gpu_layers 'all' is not a layer count"),
    ],
)
def test_an_offloading_build_shows_the_layers_asked_for(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], toml: int | None, expected: str
) -> None:
    # As a CUDA or Metal build answers; this machine's build may not offload.
    monkeypatch.setattr(hardware, "gpu_offload_supported", lambda: True)
    settings = _settings()
    settings.local_gpu_layers = toml
    assert describe(settings, env).endswith(expected)


def test_providers_lists_the_local_engine_detail_and_none_for_others(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = run_cli(capsys, "providers", "--json")
    assert result.code == 0, result.err
    rows = {row["name"]: row for row in json.loads(result.out)["providers"]}
    assert rows["local"]["detail"].startswith("backend ")
    assert rows["scripted"]["detail"] == ""


@pytest.mark.model
def test_a_running_daemon_reports_the_layers_it_offloaded(
    provider: LocalProvider,  # noqa: F811
) -> None:
    status = provider.ensure_running()
    text = describe(load_settings(env=os.environ), os.environ)
    assert text.endswith(f"; {status.n_gpu_layers} layers offloaded (daemon pid {status.pid})")
    assert text.startswith(f"backend {', '.join(hardware.backends(status.system_info))};")
