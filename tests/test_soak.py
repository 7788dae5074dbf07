"""`evalctl soak` on the embedded model: a short soak ends with `no leak`, writes a valid
result with every sample and the environment, and a chart; bad plans are refused."""

from __future__ import annotations

import json
import tomllib
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evalctl.lifecycle import procs
from evalctl.results.document import load_document
from evalctl.stability.models import soak_from_document
from tests.cli_helpers import run_cli
from tests.local_helpers import embedded_model
from tests.stability_helpers import (
    one_thread,  # noqa: F401  (fixture)
    short_suite,  # noqa: F401  (fixture)
)

REQUESTS = 10
WARMUP = 3


@pytest.mark.model
def test_soak_on_the_embedded_model_is_no_leak(
    short_suite: Path,  # noqa: F811
    one_thread: None,  # noqa: F811
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "soak"
    done = run_cli(
        capsys,
        "soak",
        "--cases",
        str(short_suite),
        "--requests",
        str(REQUESTS),
        "--warmup",
        str(WARMUP),
        "--timeout",
        "180",
        "--out",
        str(out),
        "--json",
    )
    assert done.code == 0, done.err + done.out
    printed = json.loads(done.out)
    result = soak_from_document(load_document(out))  # the directory stands for soak.json
    assert printed["result"]["soak_id"] == result.soak_id

    v = result.verdict
    assert v.verdict == "no leak", v.reason
    assert v.metric == "anon_bytes"
    assert v.growth_pct is not None and v.growth_pct <= v.threshold_pct
    assert v.baseline_request == WARMUP
    assert v.window_samples == REQUESTS - WARMUP + 1

    assert [s.request for s in result.samples] == list(range(REQUESTS + 1))
    for s in result.samples:
        assert 0 < s.anon_bytes <= s.uss_bytes <= s.rss_bytes
    assert [r.index for r in result.requests] == list(range(1, REQUESTS + 1))
    assert all(r.error is None for r in result.requests)
    assert result.settings.cases == ["short/colour", "short/animal", "short/city"]
    assert [r.case for r in result.requests[:4]] == [
        "short/colour",
        "short/animal",
        "short/city",
        "short/colour",
    ]
    assert result.daemon.requests_served_after == REQUESTS
    assert result.daemon.anon_source == "RssAnon"

    env = result.environment
    model = embedded_model()
    assert env.model_name == model.name
    assert env.model_sha256 == model.expected_sha256
    assert env.host and env.cpu and env.ram_bytes > 0
    assert env.evalctl and env.llama_cpp
    assert env.n_threads == 1

    toml = tomllib.loads((out / "soak.toml").read_text())
    assert toml["kind"] == "soak" and len(toml["samples"]) == REQUESTS + 1
    chart = ET.fromstring((out / "memory.svg").read_text().split("\n", 1)[1])
    assert chart.tag.endswith("svg")
    assert "Anonymous memory" in (out / "memory.svg").read_text()
    ET.fromstring((out / "soak.html").read_text().removeprefix("<!DOCTYPE html>\n"))

    # The soak started the daemon, so it stopped it.
    assert not procs.alive(result.daemon.pid)


def test_a_plan_without_enough_samples_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    done = run_cli(capsys, "soak", "--requests", "6", "--warmup", "5")
    assert done.code == 2
    assert "--requests" in done.err and "needs 3" in done.err


def test_sample_every_counts_towards_the_window(capsys: pytest.CaptureFixture[str]) -> None:
    done = run_cli(capsys, "soak", "--requests", "10", "--warmup", "5", "--sample-every", "10")
    assert done.code == 2  # samples after requests 5 and 10 only


@pytest.mark.model
def test_the_engine_frees_each_sampler_chain() -> None:
    """The leak the first soaks found: llama-cpp-python 0.3.36 leaves each generation's
    sampler chain (576 KiB of native memory on this model) to the cyclic garbage collector,
    which native allocations never trigger. The engine frees it when generation ends; a
    10-request soak is too short to see the 576 KiB/request against its 5% threshold, so
    the fix is checked here directly."""
    from evalctl.chat import CompletionRequest, Message
    from evalctl.server.engine import Engine, EngineConfig

    model = embedded_model()
    engine = Engine(EngineConfig(model.path, model.name, n_ctx=512, n_threads=1))
    engine.load()
    try:
        for schema in (None, {"type": "object", "properties": {"a": {"type": "string"}}}):
            request = CompletionRequest(
                messages=[Message.user("Say hi.")], max_tokens=4, json_schema=schema
            )
            engine.complete(request)
            assert getattr(engine._llm, "_sampler", "missing") is None
    finally:
        engine.close()
