"""MCP servers as a suite's tools (`[[suite.mcp]]`, docs/mcp.md), against real servers: the
npm reference servers (`server-everything` 2026.8.31 and `server-filesystem`, installed once
by `make setup-mcp`, run with `node`), and the project's own Python server
(tests/mcp/own_server.py) over stdio and streamable HTTP. Every run goes through the real
`evalctl` entry point on the scripted provider."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evalctl.cases.tooldecl import McpDecl
from evalctl.mcp_toolset import McpServerError, McpToolset
from tests.cli_helpers import evalctl
from tests.conftest import REPO

SERVERS = Path(
    os.environ.get("EVALCTL_MCP_SERVERS", Path.home() / ".cache" / "evalctl" / "mcp-servers")
)
PACKAGES = SERVERS / "node_modules" / "@modelcontextprotocol"
EVERYTHING = PACKAGES / "server-everything" / "dist" / "index.js"
FILESYSTEM = PACKAGES / "server-filesystem" / "dist" / "index.js"
OWN_SERVER = REPO / "tests" / "mcp" / "own_server.py"


@pytest.fixture(scope="module")
def node() -> str:
    """node, and the reference servers `make setup-mcp` installs: a clear failure without."""
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not on PATH: install Node.js 20+, then `make setup-mcp`")
    for script in (EVERYTHING, FILESYSTEM):
        if not script.is_file():
            pytest.fail(
                f"{script} is missing: run `make setup-mcp` (it installs the pinned servers)"
            )
    return found


def _marked(mark: str) -> list[int]:
    """Processes whose environment carries EVALCTL_TEST_MARK=`mark` (a server and its
    launcher both do)."""
    needle = f"EVALCTL_TEST_MARK={mark}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _gone(mark: str, within: float = 60.0) -> bool:
    """Whether every marked process is gone (waiting up to `within` on a busy machine)."""
    deadline = time.monotonic() + within
    while _marked(mark):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _everything_suite(tmp_path: Path, mark: str, extra: str = "") -> Path:
    return _write(
        tmp_path / "everything.toml",
        f"""
[suite]
name = "everything"
kind = "assert"
system_prompt = "Use the tools."
tool_choice = "echo"

[[suite.mcp]]
name = "everything"
command = ["node", "{EVERYTHING}", "stdio"]
env = {{ EVALCTL_TEST_MARK = "{mark}" }}
tools = ["echo", "get-sum", "get-structured-content"]
{extra}

[[case]]
id = "three-calls"
input = {{ prompt = "Echo hi, add 2 and 3, and tell me Chicago's weather." }}
[[case.assert]]
type = "tool-called"
name = "get-sum"
args = {{ a = 2, b = 3 }}

[[case]]
id = "bad-sum"
input = {{ prompt = "Add x and 1." }}
[[case.assert]]
type = "tool-called"
name = "get-sum"
[[case.assert]]
type = "tool-error"
""",
    )


SCRIPT = """
[[cases.three-calls]]
tool_calls = [
  { name = "echo", arguments = { message = "hi" } },
  { name = "get-sum", arguments = { a = 2, b = 3 } },
  { name = "get-structured-content", arguments = { location = "Chicago" } },
]
[[cases.three-calls]]
content = "Done."

[[cases.bad-sum]]
tool_calls = [{ name = "get-sum", arguments = { a = "x", b = 1 } }]
[[cases.bad-sum]]
content = "It failed."
"""


def _results(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def _case(results: dict[str, Any], case_id: str) -> dict[str, Any]:
    return next(c for c in results["cases"] if c["id"] == case_id)


def test_server_everything_tools_are_called_recorded_and_its_process_ends(
    tmp_path: Path, node: str
) -> None:
    mark = uuid.uuid4().hex
    suite = _everything_suite(tmp_path, mark)
    script = _write(tmp_path / "script.toml", SCRIPT)
    done = evalctl(
        tmp_path, "run", "--cases", str(suite), "--provider", "scripted", "--script",
        str(script), "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = _results(tmp_path / "out")
    three = _case(results, "three-calls")
    assert three["status"] == "pass"
    calls = three["tool_calls"]
    assert [c["name"] for c in calls] == ["echo", "get-sum", "get-structured-content"]
    assert calls[0]["result"] == "Echo: hi" and not calls[0]["is_error"]
    assert calls[1]["arguments"] == {"a": 2, "b": 3}
    assert calls[1]["result"] == "The sum of 2 and 3 is 5."
    weather = calls[2]["data"]["structured_content"]
    assert set(weather) == {"temperature", "conditions", "humidity"}
    assert calls[2]["data"]["server"] == "everything"
    assert all(c["duration_ms"] >= 0 for c in calls)
    # The transcript holds the calls and what each returned, as for any tool.
    transcript = json.dumps(three["transcript"])
    assert "get-structured-content" in transcript and "The sum of 2 and 3 is 5." in transcript
    # The server's answer with isError (invalid arguments) is a failed call the model saw,
    # and the case went on to its answer: never a case error.
    bad = _case(results, "bad-sum")
    assert bad["status"] == "fail" and bad.get("error") is None
    checks = {c["name"]: c["status"] for c in bad["checks"]}
    assert checks == {"tool-called:get-sum": "pass", "tool-error:*": "fail"}
    (failed,) = bad["tool_calls"]
    assert failed["is_error"] is True
    assert "Invalid arguments for tool get-sum" in failed["result"]
    assert failed["data"]["is_error"] is True
    assert _gone(mark), "the MCP server outlived the run"


def test_a_sigkilled_evalctl_takes_its_stdio_server_with_it(tmp_path: Path, node: str) -> None:
    mark = uuid.uuid4().hex
    suite = _write(
        tmp_path / "slow.toml",
        f"""
[suite]
name = "slow"
kind = "assert"

[[suite.mcp]]
name = "everything"
command = ["node", "{EVERYTHING}", "stdio"]
env = {{ EVALCTL_TEST_MARK = "{mark}" }}
tools = ["trigger-long-running-operation"]
timeout_s = 600

[[case]]
id = "long"
input = {{ prompt = "Run the long operation." }}
[[case.assert]]
type = "contains"
value = "done"
""",
    )
    script = _write(
        tmp_path / "script.toml",
        """
[[cases.long]]
tool_calls = [
  { name = "trigger-long-running-operation", arguments = { duration = 300, steps = 2 } },
]
[[cases.long]]
content = "done"
""",
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalctl.cli", "run", "--cases", str(suite), "--provider",
         "scripted", "--script", str(script), "--out", str(tmp_path / "out"), "--timeout", "900"],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while len(_marked(mark)) < 2 and proc.poll() is None:
            assert time.monotonic() < deadline, "the server never started"
            time.sleep(0.1)
        assert proc.poll() is None, "evalctl ended before the long call"
        # Mid-call (the operation takes 300 s): kill evalctl where it cannot clean up.
        time.sleep(1.0)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert _gone(mark), "the MCP server outlived a SIGKILLed evalctl"
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in _marked(mark):
            os.kill(pid, signal.SIGKILL)


def test_no_tools_exec_starts_no_server_and_says_why(tmp_path: Path, node: str) -> None:
    started = tmp_path / "STARTED"
    suite = _write(
        tmp_path / "guarded.toml",
        f"""
[suite]
name = "guarded"
kind = "assert"

[[suite.mcp]]
name = "everything"
command = ["sh", "-c", "touch {started}; exec node {EVERYTHING} stdio"]

[[case]]
id = "one"
input = {{ prompt = "hi" }}
[[case.assert]]
type = "contains"
value = "hi"
""",
    )
    script = _write(tmp_path / "script.toml", '[[default]]\ncontent = "hi"\n')
    run = evalctl(
        tmp_path, "run", "--no-tools-exec", "--cases", str(suite), "--provider", "scripted",
        "--script", str(script), "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert "MCP server 'everything' is started as a program (stdio)" in run.stderr
    assert "no process was started" in run.stderr
    assert "suite.mcp[1].command" in run.stderr
    # Validating and listing never start one either.
    for args in (("cases", "validate", str(suite)), ("cases", "list", "--cases", str(suite))):
        done = evalctl(tmp_path, *args)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    assert not started.exists()


def _own_suite(tmp_path: Path, server: str, *, per_case: bool = False) -> Path:
    return _write(
        tmp_path / "own.toml",
        f"""
[suite]
name = "own"
kind = "assert"

[[suite.mcp]]
name = "own"
{server}
per_case = {"true" if per_case else "false"}

[[case]]
id = "first"
input = {{ prompt = "count" }}
[[case.assert]]
type = "tool-called"
name = "counter"

[[case]]
id = "second"
input = {{ prompt = "count" }}
[[case.assert]]
type = "tool-called"
name = "refuse"
""",
    )


OWN_SCRIPT = """
[[cases.first]]
tool_calls = [
  { name = "counter", arguments = {} },
  { name = "weather", arguments = { city = "Oslo" } },
  { name = "secret_env", arguments = {} },
]
[[cases.first]]
content = "ok"
[[cases.second]]
tool_calls = [
  { name = "counter", arguments = {} },
  { name = "refuse", arguments = { reason = "no" } },
]
[[cases.second]]
content = "ok"
"""


@pytest.mark.parametrize("per_case", [False, True])
def test_own_python_server_over_stdio(tmp_path: Path, per_case: bool) -> None:
    secret = "sk-own-" + uuid.uuid4().hex
    suite = _own_suite(
        tmp_path,
        f'command = ["{sys.executable}", "{OWN_SERVER}"]\n'
        'env = { MCP_TEST_TOKEN = "${OWN_MCP_SECRET}" }',
        per_case=per_case,
    )
    script = _write(tmp_path / "script.toml", OWN_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OWN_MCP_SECRET": secret}
    done = subprocess.run(
        [sys.executable, "-m", "evalctl.cli", "run", "--cases", str(suite), "--provider",
         "scripted", "--script", str(script), "--out", str(tmp_path / "out"), "-j", "1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = _results(tmp_path / "out")
    first, second = _case(results, "first"), _case(results, "second")
    assert first["tool_calls"][0]["result"] == "1"
    # A fresh server per case starts counting again; one server for the run goes on.
    assert second["tool_calls"][0]["result"] == ("1" if per_case else "2")
    assert first["tool_calls"][1]["data"]["structured_content"] == {"city": "Oslo", "celsius": 4}
    refused = second["tool_calls"][1]
    assert refused["is_error"] and "refused: no" in refused["result"]
    assert second["status"] == "pass"
    # The secret the server's environment was given is redacted wherever evalctl wrote.
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(encoding="utf-8", errors="replace"), path
    assert secret not in done.stdout + done.stderr


@pytest.fixture
def http_server() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, str(OWN_SERVER), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "no HTTP server"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.kill()
        proc.wait()


def test_own_python_server_over_streamable_http(tmp_path: Path, http_server: str) -> None:
    token = "Bearer tok-" + uuid.uuid4().hex
    suite = _own_suite(
        tmp_path, f'url = "{http_server}"\nheaders = {{ Authorization = "${{OWN_MCP_AUTH}}" }}'
    )
    script = _write(tmp_path / "script.toml", OWN_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OWN_MCP_AUTH": token}
    done = subprocess.run(
        [sys.executable, "-m", "evalctl.cli", "run", "--cases", str(suite), "--provider",
         "scripted", "--script", str(script), "--out", str(tmp_path / "out"), "-j", "1"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = _results(tmp_path / "out")
    assert [c["result"] for c in _case(results, "first")["tool_calls"]][:2] == [
        "1",
        '{\n  "city": "Oslo",\n  "celsius": 4\n}',
    ]
    assert _case(results, "second")["tool_calls"][1]["is_error"] is True


def test_an_http_header_variable_is_refused_under_no_tools_exec(tmp_path: Path) -> None:
    suite = _own_suite(
        tmp_path, 'url = "http://127.0.0.1:9/mcp"\nheaders = { Authorization = "${OWN_MCP_AUTH}" }'
    )
    script = _write(tmp_path / "script.toml", '[[default]]\ncontent = "hi"\n')
    done = evalctl(
        tmp_path, "run", "--no-tools-exec", "--cases", str(suite), "--provider", "scripted",
        "--script", str(script), "--out", str(tmp_path / "out"),
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "${OWN_MCP_AUTH}" in done.stderr and "suite.mcp[1].headers.Authorization" in done.stderr


@pytest.mark.parametrize("required", [False, True])
def test_a_server_that_cannot_start_skips_or_errors_the_suite(
    tmp_path: Path, required: bool
) -> None:
    suite = _own_suite(
        tmp_path,
        f'command = ["{sys.executable}", "-c", "import sys; print(\'boom\', file=sys.stderr); '
        f'sys.exit(3)"]\nrequired = {"true" if required else "false"}',
    )
    script = _write(tmp_path / "script.toml", OWN_SCRIPT)
    done = evalctl(
        tmp_path, "run", "--cases", str(suite), "--provider", "scripted", "--script",
        str(script), "--out", str(tmp_path / "out"),
    )  # fmt: skip
    results = _results(tmp_path / "out")
    statuses = {c["id"]: c["status"] for c in results["cases"]}
    if required:
        assert statuses == {"first": "error", "second": "error"}, done.stderr
        message = _case(results, "first")["error"]
    else:
        assert statuses == {"first": "skipped", "second": "skipped"}, done.stderr
        message = _case(results, "first")["skip_reason"]
    assert "MCP server 'own'" in message and "boom" in message


def test_server_filesystem_over_a_temporary_folder(tmp_path: Path, node: str) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "notes.txt").write_text("pinot noir, 2019\n", encoding="utf-8")
    mark = uuid.uuid4().hex
    decl = McpDecl(
        name="fs",
        command=["node", str(FILESYSTEM), str(folder)],
        env={"EVALCTL_TEST_MARK": mark},
        tools=["read_text_file", "list_directory"],
        prefix="fs_",
    )
    toolset = McpToolset(decl, tmp_path, os.environ)
    toolset.open()
    try:
        assert set(toolset.tools) == {"fs_read_text_file", "fs_list_directory"}
        read = toolset.call("read_text_file", {"path": str(folder / "notes.txt")}, 30)
        assert not read.is_error and "pinot noir, 2019" in read.content[0].text  # type: ignore[union-attr]
        outside = toolset.call("read_text_file", {"path": "/etc/hostname"}, 30)
        assert outside.is_error  # outside the allowed folder: the server's own error result
        listing = toolset.call("list_directory", {"path": str(folder)}, 30)
        assert "notes.txt" in listing.content[0].text  # type: ignore[union-attr]
    finally:
        toolset.close()
    assert _gone(mark)


def test_a_glob_that_chooses_no_tool_is_refused_naming_the_server(
    tmp_path: Path, node: str
) -> None:
    decl = McpDecl(name="everything", command=["node", str(EVERYTHING), "stdio"], tools=["ech0"])
    toolset = McpToolset(decl, tmp_path, os.environ)
    with pytest.raises(McpServerError) as caught:
        toolset.open()
    assert "MCP server 'everything'" in caught.value.message
    assert "no tool matching 'ech0'" in caught.value.message and "get-sum" in caught.value.message


def test_a_tool_name_a_provider_would_refuse_is_refused_naming_server_and_tool(
    tmp_path: Path,
) -> None:
    from mcp_types import Tool as Listed

    toolset = McpToolset(McpDecl(name="odd", url="http://127.0.0.1:9/mcp"), tmp_path, {})
    with pytest.raises(McpServerError) as caught:
        toolset._offer([Listed(name="has space", input_schema={"type": "object"})])
    assert "MCP server 'odd'" in caught.value.message and "'has space'" in caught.value.message
    with pytest.raises(McpServerError) as caught:
        toolset._offer([Listed(name="arr", input_schema={"type": "array"})])
    assert "tool 'arr'" in caught.value.message and "not of type object" in caught.value.message
    # The draft a schema names is the server's business: what a provider is offered drops it.
    draft = "http://json-schema.org/draft-07/schema#"
    (offered,) = toolset._offer(
        [Listed(name="ok", input_schema={"$schema": draft, "type": "object"})]
    ).values()
    assert offered.definition.parameters == {"type": "object"}


def test_tool_choice_and_assertions_may_name_tools_known_only_once_the_server_answers(
    tmp_path: Path,
) -> None:
    suite = _everything_suite(tmp_path, "unused")
    done = evalctl(tmp_path, "cases", "validate", str(suite))
    assert done.returncode == 0, done.stdout + done.stderr
    bad = _write(
        tmp_path / "bad.toml",
        suite.read_text(encoding="utf-8").replace(
            'id = "bad-sum"', 'id = "bad-sum"\nmcp = ["nowhere"]'
        ),
    )
    done = evalctl(tmp_path, "cases", "validate", str(bad))
    assert done.returncode == 2
    assert "unknown MCP server 'nowhere'" in done.stdout + done.stderr


def test_validate_connect_checks_the_named_tools_against_the_server(
    tmp_path: Path, node: str
) -> None:
    mark = uuid.uuid4().hex
    suite = _everything_suite(tmp_path, mark)
    done = evalctl(tmp_path, "cases", "validate", "--connect", str(suite))
    assert done.returncode == 0, done.stdout + done.stderr
    wrong = _write(
        tmp_path / "wrong.toml",
        suite.read_text(encoding="utf-8").replace('name = "get-sum"', 'name = "get-summ"'),
    )
    # Without --connect the name cannot be known, so it is not refused; with it, it is.
    assert evalctl(tmp_path, "cases", "validate", str(wrong)).returncode == 0
    done = evalctl(tmp_path, "cases", "validate", "--connect", str(wrong))
    assert done.returncode == 2
    said = done.stdout + done.stderr
    assert "case 'three-calls': field 'case.assert[1].name': unknown tool 'get-summ'" in said
    assert "get-sum" in said.split("answered:")[1]
    assert _gone(mark)


def test_an_unset_header_variable_is_bad_input_naming_the_field(tmp_path: Path) -> None:
    suite = _own_suite(
        tmp_path, 'url = "http://127.0.0.1:9/mcp"\nheaders = { Authorization = "${NOT_SET_HERE}" }'
    )
    script = _write(tmp_path / "script.toml", OWN_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "NOT_SET_HERE"}
    done = subprocess.run(
        [sys.executable, "-m", "evalctl.cli", "run", "--cases", str(suite), "--provider",
         "scripted", "--script", str(script), "--out", str(tmp_path / "out")],
        cwd=tmp_path, env={**env, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "environment variable NOT_SET_HERE is not set" in done.stderr
    assert "own.toml" in done.stderr and "mcp own.headers.Authorization" in done.stderr


def test_a_server_that_dies_mid_call_is_a_tool_error_and_the_case_goes_on(
    tmp_path: Path,
) -> None:
    mark = uuid.uuid4().hex
    suite = _own_suite(
        tmp_path,
        f'command = ["{sys.executable}", "{OWN_SERVER}"]\nenv = {{ EVALCTL_TEST_MARK = "{mark}" }}',
    )
    script = _write(
        tmp_path / "script.toml",
        """
[[cases.first]]
tool_calls = [{ name = "crash", arguments = {} }]
[[cases.first]]
tool_calls = [{ name = "counter", arguments = {} }]
[[cases.first]]
content = "the server is gone"
[[cases.second]]
content = "nothing"
""",
    )
    done = evalctl(
        tmp_path, "run", "--cases", str(suite), "--provider", "scripted", "--script",
        str(script), "--out", str(tmp_path / "out"), "-j", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first = _case(_results(tmp_path / "out"), "first")
    assert first.get("error") is None and first["status"] in ("pass", "fail")
    crashed, after = first["tool_calls"]
    # The death reaches evalctl at once: the call in flight and the next one fail, naming it.
    assert crashed["is_error"] and "MCP server 'own'" in crashed["result"]
    assert "closed the connection" in crashed["result"]
    assert after["is_error"] and "MCP server 'own'" in after["result"]
    assert _gone(mark)
