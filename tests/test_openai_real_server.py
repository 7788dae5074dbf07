"""`--provider openai` against a real OpenAI-compatible server that nobody here wrote:
llama-cpp-python's own (`python -m llama_cpp.server`) serving the embedded model.

The server starts once for the module on a free port on 127.0.0.1; readiness is polled (no
fixed sleep), with a generous bound for a busy machine. Cases are asserted *scored*, never
passed: what the 135M model answers is not this test's business, that every case makes it
through the real wire format (tools and tool results, JSON output, usage) is. A dummy key is
set so its absence from every file and all output can be checked.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalctl.modelfiles.manifest import resolve
from evalctl.scoring.kinds import RequestShape
from tests.cli_helpers import run_cli
from tests.echo_kind import EchoKind

pytestmark = pytest.mark.model

DUMMY_KEY = "sk-test-llamacpp-server-dummy-0123456789"
# Loading a 100 MB model takes seconds on an idle machine; allow for a very busy one.
READY_WITHIN_S = 300.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ready(port: int) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/v1/models")
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    model = resolve(None)
    port = _free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "llama_cpp.server",
                "--model",
                str(model.path),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                # One thread: llama.cpp threads busy-wait, and the machine is shared.
                "--n_threads",
                "1",
                "--n_ctx",
                "4096",
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + READY_WITHIN_S
        while not _ready(port):
            assert proc.poll() is None, f"llama_cpp.server exited: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, "llama_cpp.server did not become ready"
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)


@pytest.fixture
def openai_env(llama_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("OPENAI_BASE_URL", llama_server)
    monkeypatch.setenv("OPENAI_API_KEY", DUMMY_KEY)
    return llama_server


def _assert_every_case_scored(out: Path, expected_cases: int) -> dict[str, object]:
    doc = json.loads((out / "results.json").read_text())
    statuses = {c["key"]: c["status"] for c in doc["cases"]}
    assert len(statuses) == expected_cases
    assert set(statuses.values()) <= {"pass", "fail"}, [
        (c["key"], c["error"]) for c in doc["cases"] if c["status"] not in ("pass", "fail")
    ]
    assert doc["provider"]["name"] == "openai"
    assert all(c["usage"]["output_tokens"] > 0 for c in doc["cases"])
    return dict(doc)


def _assert_key_nowhere(out: Path, *texts: str) -> None:
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert DUMMY_KEY not in path.read_text(errors="replace"), path
    for text in texts:
        assert DUMMY_KEY not in text


def test_asset_triage_cases_are_scored_and_the_key_leaks_nowhere(
    openai_env: str, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    suite = repo / "cases" / "asset-triage.toml"
    args = ["run", "--provider", "openai", "--cases", str(suite), "--case", "stern-*"]
    result = run_cli(capsys, *args, "--out", str(out), "--no-progress")
    assert result.code in (0, 1), result.err  # 1: the gate may fail; never 2 or 3
    doc = _assert_every_case_scored(out, expected_cases=3)
    # asset-triage asks for JSON matching a schema; llama.cpp's server constrains decoding
    # to it in JSON mode, so every answer parses.
    for case in doc["cases"]:  # type: ignore[attr-defined]
        assert json.loads(case["output"]).keys() == {"os", "arch", "format", "kind"}
    _assert_key_nowhere(out, result.out, result.err)


class ForcedEcho(EchoKind):
    """The echo kind with the tool forced on the first turn: llama.cpp's server returns tool
    calls only for a named tool_choice, so the tool result must go back over the wire."""

    def request_shape(self, suite: object, case: object) -> RequestShape:  # type: ignore[override]
        return RequestShape(first_turn_tool_choice="upper")


def test_a_tool_using_suite_round_trips_tool_results(
    openai_env: str,
    echo_suite: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from evalctl.plugin_loader import registry

    registry().add_kind("forced-echo", FORCED_ECHO)
    echo_suite.write_text(echo_suite.read_text().replace('kind = "echo"', 'kind = "forced-echo"'))
    out = tmp_path / "out"
    args = ["run", "--provider", "openai", "--cases", str(echo_suite), "--out", str(out)]
    result = run_cli(capsys, *args, "--no-progress")
    assert result.code in (0, 1), result.err
    doc = _assert_every_case_scored(out, expected_cases=2)
    for case in doc["cases"]:  # type: ignore[attr-defined]
        # The forced first turn called the real tool; the model then answered in text.
        assert [t["name"] for t in case["tool_calls"]][:1] == ["upper"]
        assert case["turns"] >= 2
    _assert_key_nowhere(out, result.out, result.err)


FORCED_ECHO = ForcedEcho()


SCHEMA_SUITE = """\
[suite]
name = "sentiment"
kind = "assert"
system_prompt = "Classify the sentiment of the review. Answer with JSON only."
max_tokens = 64

[suite.output_schema]
type = "object"
required = ["sentiment"]
additionalProperties = false
properties = { sentiment = { type = "string", enum = ["positive", "negative"] } }

[[case]]
id = "happy"
input = { prompt = "Review: I love this kettle, it boils in a minute." }
[[case.assert]]
type = "json-field"
path = "sentiment"
equals = "positive"

[[case]]
id = "sad"
input = { prompt = "Review: It broke after two days and support never answered." }
[[case.assert]]
type = "json-field"
path = "sentiment"
equals = "negative"
"""


def test_an_output_schema_suite_gets_json_matching_the_schema(
    openai_env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = tmp_path / "sentiment.toml"
    suite.write_text(SCHEMA_SUITE)
    out = tmp_path / "out"
    args = ["run", "--provider", "openai", "--cases", str(suite), "--out", str(out)]
    result = run_cli(capsys, *args, "--no-progress")
    assert result.code == 0, result.err
    doc = _assert_every_case_scored(out, expected_cases=2)
    for case in doc["cases"]:  # type: ignore[attr-defined]
        # JSON mode with the schema's grammar: the answer always fits the schema.
        checks = {c["name"]: c["status"] for c in case["checks"]}
        assert checks["output_schema"] == "pass", case["output"]
    _assert_key_nowhere(out, result.out, result.err)


def test_the_issue_s_tool_using_assert_suite_is_scored(
    openai_env: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.assert_helpers import write_issue_suite

    suite = write_issue_suite(tmp_path)
    out = tmp_path / "out"
    args = ["run", "--provider", "openai", "--cases", str(suite), "--out", str(out)]
    result = run_cli(capsys, *args, "--no-progress")
    assert result.code == 0, result.err
    doc = _assert_every_case_scored(out, expected_cases=1)
    [case] = doc["cases"]  # type: ignore[index]
    # The tool went over the wire (llama-cpp-python's server answers "auto" with text, so
    # whether the model called it is the model's business); the JSON answer is checked.
    assert {c["name"] for c in case["checks"]} >= {"output_schema", "tool-called:weather"}
    _assert_key_nowhere(out, result.out, result.err)
