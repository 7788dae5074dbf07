"""Sampling controls: `temperature`, `top_p`, `seed` in suites and cases, --temperature and
--seed, what each provider really sends (seen by the fake wire servers), and what results
record of it."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalctl.cases.loader import load_all
from evalctl.cases.schema import SuiteTable
from evalctl.chat import Sampling
from evalctl.config import Settings
from evalctl.errors import BadInputError
from evalctl.fakes.llm_server import FakeLLMServer, Step
from evalctl.results.io import read_run
from evalctl.results.models import RunSettings
from evalctl.results.versions import upgrade
from evalctl.retry import RetryPolicy
from evalctl.runner.api import RunOutcome, RunRequest
from evalctl.runner.execute import execute_run
from evalctl.runner.sampling import SamplingFlags, resolve_sampling
from tests.cli_helpers import REPO
from tests.cloud_helpers import ANTHROPIC_KEY, GOOGLE_KEY, OPENAI_KEY

NO_SLEEP = RetryPolicy(max_attempts=2, sleep=lambda _s: None, rng=random.Random(0))

SUITE = """
[suite]
name = "echo"
kind = "echo"
system_prompt = "Answer exactly."
tools = ["upper"]
max_turns = 3
max_tokens = 64
temperature = 0.7
top_p = 0.9
seed = 11

[[case]]
id = "hello"
input = { prompt = "say hello" }
expected = { answer = "hello" }

[[case]]
id = "own"
input = { prompt = "say own" }
expected = { answer = "own" }
temperature = 0.2
seed = 5
"""

SCRIPT = """
[[cases."echo/hello"]]
content = "hello"

[[cases."echo/own"]]
content = "own"
"""


@pytest.fixture
def sampled_suite(tmp_path: Path) -> Path:
    from tests import echo_kind

    echo_kind.install()
    path = tmp_path / "cases" / "echo.toml"
    path.parent.mkdir()
    path.write_text(SUITE)
    return path


def echo_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI in a child process, with the test-only echo kind registered."""
    return subprocess.run(
        [sys.executable, "-m", "tests.echo_cli", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _table(**fields: object) -> SuiteTable:
    return SuiteTable(name="s", kind="echo", **fields)  # type: ignore[arg-type]


def test_precedence_is_flag_then_case_then_suite_then_greedy(sampled_suite: Path) -> None:
    suite = load_all([sampled_suite], sampled_suite.parent)[0]
    hello, own = suite.cases
    none = SamplingFlags()
    assert resolve_sampling(none, _table()) == Sampling(temperature=0.0, top_p=1.0, seed=0)
    assert resolve_sampling(none, suite.table, hello) == Sampling(
        temperature=0.7, top_p=0.9, seed=11
    )
    assert resolve_sampling(none, suite.table, own) == Sampling(temperature=0.2, top_p=0.9, seed=5)
    flags = SamplingFlags(temperature=1.5, seed=99)
    assert resolve_sampling(flags, suite.table, own) == Sampling(
        temperature=1.5, top_p=0.9, seed=99
    )


@pytest.mark.parametrize(
    ("old", "line", "field"),
    [
        ("temperature = 0.2", "temperature = 2.5", "temperature"),
        ("temperature = 0.2", "top_p = 0", "top_p"),
        ("seed = 5", "seed = -1", "seed"),
        ("seed = 5", 'seed = "one"', "seed"),
    ],
)
def test_bad_sampling_values_name_the_case_and_field(
    sampled_suite: Path, old: str, line: str, field: str
) -> None:
    sampled_suite.write_text(SUITE.replace(old, line))
    with pytest.raises(BadInputError) as info:
        load_all([sampled_suite], sampled_suite.parent)
    assert (info.value.case_id, info.value.field) == ("own", f"case.{field}")


def _scripted(suite: Path, tmp_path: Path, **request_args: object) -> RunOutcome:
    script = tmp_path / "script.toml"
    script.write_text(SCRIPT)
    request = RunRequest(
        provider="scripted",
        script=script,
        paths=[suite],
        out_dir=tmp_path / "out",
        show_progress=False,
        **request_args,  # type: ignore[arg-type]
    )
    return execute_run(request, Settings(), {}, retry=NO_SLEEP)


def test_results_record_the_sampling_of_each_suite_and_case(
    sampled_suite: Path, tmp_path: Path
) -> None:
    run = _scripted(sampled_suite, tmp_path).result
    settings = run.settings
    assert (settings.temperature, settings.seed) == (None, None)
    assert settings.sampling == {"echo": Sampling(temperature=0.7, top_p=0.9, seed=11)}
    assert settings.max_tokens == {"echo": 64}
    hello, own = run.cases
    assert hello.sampling == Sampling(temperature=0.7, top_p=0.9, seed=11)
    assert own.sampling == Sampling(temperature=0.2, top_p=0.9, seed=5)
    # And it survives the file.
    again = read_run(tmp_path / "out" / "results.json")
    assert again.cases[1].sampling == own.sampling


def test_flags_win_and_are_recorded(sampled_suite: Path, tmp_path: Path) -> None:
    run = _scripted(sampled_suite, tmp_path, temperature=0.0, seed=3).result
    assert (run.settings.temperature, run.settings.seed) == (0.0, 3)
    assert [c.sampling for c in run.cases] == [Sampling(temperature=0.0, top_p=0.9, seed=3)] * 2


def test_results_written_before_sampling_still_read() -> None:
    # What every earlier file holds: never-set fields, greedy with seed 0.
    legacy = {"temperature": 0.0, "seed": 0, "max_tokens": None, "timeout_s": 120.0}
    # Read as a file of that time is read: upgraded once (evalctl.results.versions).
    document = {"schema_version": 2, "kind": "run", "settings": legacy, "cases": []}
    settings = RunSettings.model_validate(upgrade("run", document)["settings"])
    assert settings.max_tokens == {} and settings.sampling == {}
    assert (settings.temperature, settings.seed) == (0.0, 0)


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(responder=lambda req: Step.reply(req.first_user_text().split()[-1])) as srv:
        yield srv


def _cloud(server: FakeLLMServer, suite: Path, out: Path, provider: str) -> RunOutcome:
    env = server.env(anthropic_key=ANTHROPIC_KEY, google_key=GOOGLE_KEY, openai_key=OPENAI_KEY)
    models = {"anthropic": "claude-test", "gemini": "gemini-test", "openai": "gpt-test"}
    request = RunRequest(
        provider=provider, model=models[provider], paths=[suite], out_dir=out, show_progress=False
    )
    return execute_run(request, Settings(), env, retry=NO_SLEEP)


def test_openai_is_sent_the_case_sampling(
    server: FakeLLMServer, sampled_suite: Path, tmp_path: Path
) -> None:
    run = _cloud(server, sampled_suite, tmp_path / "o", "openai").result
    sent = {
        req.first_user_text(): (req.body["temperature"], req.body["top_p"], req.body["seed"])
        for req in server.requests
        if isinstance(req.body, dict) and "messages" in req.body
    }
    assert sent == {"say hello": (0.7, 0.9, 11), "say own": (0.2, 0.9, 5)}
    assert run.cases[1].sampling == Sampling(temperature=0.2, top_p=0.9, seed=5)


def test_gemini_is_sent_the_case_sampling(
    server: FakeLLMServer, sampled_suite: Path, tmp_path: Path
) -> None:
    _cloud(server, sampled_suite, tmp_path / "g", "gemini")
    configs = {
        req.first_user_text(): req.body["generationConfig"]
        for req in server.requests
        if isinstance(req.body, dict)
    }
    own = configs["say own"]
    assert (own["temperature"], own["topP"], own["seed"]) == (0.2, 0.9, 5)
    assert configs["say hello"]["seed"] == 11


def test_anthropic_is_sent_none_and_results_say_so(
    server: FakeLLMServer, sampled_suite: Path, tmp_path: Path
) -> None:
    run = _cloud(server, sampled_suite, tmp_path / "a", "anthropic").result
    for req in server.requests:
        assert isinstance(req.body, dict)
        assert not {"temperature", "top_p", "top_k", "seed"} & set(req.body)
    nothing = Sampling(temperature=None, top_p=None, seed=None)
    assert run.settings.sampling == {"echo": nothing}
    assert all(c.sampling == nothing for c in run.cases)


def test_cli_flags_and_a_resume_that_contradicts_them(sampled_suite: Path, tmp_path: Path) -> None:
    script = tmp_path / "script.toml"
    script.write_text(SCRIPT)
    out = tmp_path / "run"
    common = ["--provider", "scripted", "--script", str(script), "--cases", str(sampled_suite)]
    done = echo_cli(
        tmp_path, "run", *common, "--out", str(out), "--seed", "7", "--temperature", "0.5"
    )
    assert done.returncode == 0, done.stderr
    data = json.loads((out / "results.json").read_text())
    assert (data["settings"]["temperature"], data["settings"]["seed"]) == (0.5, 7)
    assert data["cases"][0]["sampling"] == {"temperature": 0.5, "top_p": 0.9, "seed": 7}

    refused = echo_cli(tmp_path, "run", "--resume", str(out), "--seed", "8", "--json")
    assert refused.returncode == 2
    assert "--seed" in refused.stdout + refused.stderr


def test_baseline_from_saved_results_refuses_sampling_flags(tmp_path: Path) -> None:
    done = echo_cli(tmp_path, "baseline", "--from", str(tmp_path), "--seed", "1")
    assert done.returncode == 2
    assert "--seed" in done.stdout + done.stderr
