"""The platform record: llama.cpp's system info parsed, what differs between two records,
what merged shards share, and the API's fingerprint from the fake OpenAI server."""

from __future__ import annotations

import random
from pathlib import Path

from evalctl.config import Settings
from evalctl.fakes.llm_server import FakeLLMServer, Step
from evalctl.results.platform import (
    Platform,
    common_platform,
    parse_system_info,
    platform_diff,
    platform_of,
)
from evalctl.retry import RetryPolicy
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from tests.cloud_helpers import OPENAI_KEY

# As llama-cpp-python 0.3.36 prints them: a native AVX-512 build, and a CUDA build.
NATIVE = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | "
    "AVX512 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 |"
)
NO_AVX = "CPU : SSE3 = 1 | SSSE3 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 |"
CUDA = "CUDA : ARCHS = 900 | USE_GRAPHS = 1 | PEER_MAX_BATCH_SIZE = 128 | " + NATIVE


def local(system_info: str, **fields: object) -> Platform:
    info: dict[str, object] = {"llama_cpp": "0.3.36", "system_info": system_info, "threads": 2}
    info.update(fields)
    return platform_of("local", "smollm2", info)


def test_system_info_parses_into_backends_and_cpu_features() -> None:
    backends, features = parse_system_info(NATIVE)
    assert backends == ["CPU"]
    assert features == [
        "SSE3",
        "SSSE3",
        "AVX",
        "AVX2",
        "F16C",
        "FMA",
        "BMI2",
        "AVX512",
        "LLAMAFILE",
        "OPENMP",
        "REPACK",
    ]
    backends, features = parse_system_info(CUDA)
    assert backends == ["CUDA", "CPU"]
    # CUDA's own settings are not CPU features.
    assert "USE_GRAPHS" not in features and "AVX512" in features


def test_the_same_platform_has_no_difference() -> None:
    assert platform_diff(local(NATIVE), local(NATIVE)) == []


def test_another_build_names_what_it_lacks() -> None:
    diff = platform_diff(local(NATIVE), local(NO_AVX))
    assert diff == ["cpu_features: AVX,AVX2,F16C,FMA,BMI2,AVX512 -> none"]


def test_gpu_offload_and_threads_are_differences() -> None:
    diff = platform_diff(local(NATIVE, gpu_layers=0), local(CUDA, gpu_layers=33, threads=16))
    assert diff == ["backends: CPU -> CUDA,CPU", "threads: 2 -> 16", "gpu_layers: 0 -> 33"]


def test_a_field_one_side_lacks_is_no_difference() -> None:
    old = Platform(provider="local", model="smollm2")  # recorded before the fingerprint
    assert platform_diff(old, local(NATIVE)) == []


def test_merged_shards_keep_only_what_they_share() -> None:
    a, b = local(NATIVE, cpu="AMD EPYC"), local(NATIVE, cpu="Intel Xeon")
    merged = common_platform([a, b])
    assert merged is not None
    assert merged.cpu is None and merged.cpu_features == a.cpu_features
    assert common_platform([a, None]) is None


def test_openai_runs_record_the_system_fingerprint(echo_suite: Path, tmp_path: Path) -> None:
    with FakeLLMServer(responder=lambda req: Step.reply("x", system_fingerprint="fp_abc")) as srv:
        request = RunRequest(
            provider="openai",
            model="gpt-test",
            paths=[echo_suite],
            out_dir=tmp_path / "out",
            show_progress=False,
        )
        env = srv.env(openai_key=OPENAI_KEY)
        retry = RetryPolicy(max_attempts=1, sleep=lambda _s: None, rng=random.Random(0))
        run = execute_run(request, Settings(), env, retry=retry).result
    assert run.platform is not None
    assert (run.platform.provider, run.platform.model) == ("openai", "gpt-test")
    assert run.platform.system_fingerprints == ["fp_abc"]
    assert run.platform.llama_cpp is None


def test_scripted_runs_record_a_bare_platform(echo_suite: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.toml"
    script.write_text('[[cases."echo/hello"]]\ncontent = "hello"\n')
    request = RunRequest(
        provider="scripted",
        script=script,
        paths=[echo_suite],
        case_glob="hello",
        out_dir=tmp_path / "out",
        show_progress=False,
    )
    run = execute_run(request, Settings(), {}).result
    assert run.platform == Platform(provider="scripted", model=run.provider.model)
