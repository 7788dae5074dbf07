"""LocalProvider against a real daemon: sequential requests, crash recovery, tool results
reaching the model, context overflow, timeouts, SHA refusal and two processes at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from evalctl.chat import (
    CompletionRequest,
    Message,
    Role,
    ToolCall,
    ToolDef,
    ToolResult,
)
from evalctl.config import load_settings
from evalctl.errors import (
    BadInputError,
    ContextOverflowError,
    ExitCode,
    ServerCrashedError,
)
from evalctl.lifecycle import procs
from evalctl.modelfiles import manifest
from evalctl.providers import registry
from evalctl.providers.base import CAP_EMBEDDINGS, CAP_JSON_SCHEMA, CAP_TOOLS, Provider
from evalctl.providers.local import LocalProvider
from evalctl.server.jsonlog import read_events
from tests.local_helpers import (
    SLOW,
    THREADS,
    UNENDING_MAX_TOKENS,
    embedded_model,
    make_provider,
    provider,  # noqa: F401  (fixture)
    reap_daemons,  # noqa: F401  (fixture)
    unending_request,
    wait_until,
)

LOOKUP = ToolDef(
    name="lookup",
    description="Look up a word in the dictionary",
    parameters={"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
)


def _ask(text: str, max_tokens: int = 16) -> CompletionRequest:
    return CompletionRequest(messages=[Message.user(text)], max_tokens=max_tokens)


def test_is_a_provider_with_verified_identity(provider: LocalProvider) -> None:  # noqa: F811
    assert isinstance(provider, Provider)
    model = embedded_model()
    assert provider.name == "local"
    assert provider.model == model.name
    assert provider.model_sha256 == model.expected_sha256
    assert provider.capabilities == {CAP_TOOLS, CAP_JSON_SCHEMA, CAP_EMBEDDINGS}
    assert provider.daemon_pid is None  # nothing started until it is needed


def test_five_sequential_requests_through_one_warm_daemon(provider: LocalProvider) -> None:  # noqa: F811
    prompts = [
        "Say hello.",
        "Name a fruit.",
        "What is 2 + 2?",
        "Name a colour.",
        "Say goodbye.",
    ]
    pids = set()
    for i, text in enumerate(prompts):
        response = provider.complete(_ask(text), timeout=SLOW)
        assert response.stop_reason in ("end_turn", "max_tokens")
        assert response.content
        assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0
        # The chat template's system preamble is shared: after the first request the KV
        # cache holds it, and the daemon says how much of the prompt it did not evaluate.
        cached = response.usage.cached_input_tokens
        assert (cached == 0) if i == 0 else (0 < cached < response.usage.input_tokens)
        assert response.model == provider.model
        pids.add(provider.daemon_pid)
    assert len(pids) == 1
    assert provider.status().requests_served == 5


def test_sigkill_between_requests_respawns_transparently(provider: LocalProvider) -> None:  # noqa: F811
    provider.complete(_ask("Say hi."), timeout=SLOW)
    old = provider.daemon_pid
    assert old is not None
    os.kill(old, signal.SIGKILL)
    assert provider.manager.wait_gone(old, 10)
    response = provider.complete(_ask("Say hi again."), timeout=SLOW)
    assert response.usage.output_tokens > 0
    new = provider.daemon_pid
    assert new is not None and new != old


def test_sigkill_during_generation_raises_server_crashed_then_recovers(
    provider: LocalProvider,  # noqa: F811
) -> None:
    provider.ensure_running()
    pid = provider.daemon_pid
    assert pid is not None
    outcome: dict[str, object] = {}

    def call() -> None:
        try:
            # Cannot end before the kill, however fast the machine.
            outcome["response"] = provider.complete(unending_request(), timeout=SLOW)
        except Exception as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=call)
    worker.start()
    # A second connection watches the daemon and pulls the trigger mid-request.
    watcher = LocalProvider(
        load_settings(env=os.environ),
        embedded_model(),
        provider.model_sha256 or "",
        n_threads=THREADS,
    )
    try:
        wait_until(lambda: watcher.status().in_flight == 1, SLOW, "generation to start")
    finally:
        watcher.close()
    os.kill(pid, signal.SIGKILL)
    worker.join(SLOW)
    error = outcome.get("error")
    assert isinstance(error, ServerCrashedError), outcome
    assert str(pid) in str(error)
    # The next request respawns the daemon and succeeds.
    response = provider.complete(_ask("Say hi."), timeout=SLOW)
    assert response.usage.output_tokens > 0
    assert provider.daemon_pid not in (None, pid)


def test_tool_result_reaches_the_model_through_the_daemon(provider: LocalProvider) -> None:  # noqa: F811
    marker = "CANARY-4412: a small burrowing mammal"
    call = ToolCall(id="call_0", name="lookup", arguments={"word": "mole"})
    request = CompletionRequest(
        messages=[
            Message.user("What is a mole? Use the dictionary."),
            Message(role=Role.ASSISTANT, tool_calls=[call]),
            Message.tool_result(ToolResult(tool_call_id="call_0", name="lookup", content=marker)),
        ],
        tools=[LOOKUP],
        max_tokens=24,
        tag="suite/tool-result",
    )
    provider.complete(request, timeout=SLOW)
    records = [
        e
        for e in read_events(provider.manager.paths.log)
        if e["event"] == "request" and e["tag"] == "suite/tool-result"
    ]
    assert len(records) == 1
    prompt = records[0]["prompt"]
    assert marker in prompt
    assert prompt.index('"arguments": {"word": "mole"}') < prompt.index(marker)


def test_forced_tool_call_and_json_schema_round_trip(provider: LocalProvider) -> None:  # noqa: F811
    forced = CompletionRequest(
        messages=[Message.user("Look up the word 'otter'.")],
        tools=[LOOKUP],
        tool_choice="lookup",
        max_tokens=40,
    )
    response = provider.complete(forced, timeout=SLOW)
    assert response.stop_reason == "tool_use"
    assert response.tool_calls[0].name == "lookup"
    assert isinstance(response.tool_calls[0].arguments.get("word"), str)
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "integer"}},
        "required": ["answer"],
    }
    structured = CompletionRequest(
        messages=[Message.user("What is 3 + 4? Answer in JSON.")], json_schema=schema, max_tokens=30
    )
    document = json.loads(provider.complete(structured, timeout=SLOW).content)
    assert isinstance(document["answer"], int)


def test_context_overflow_is_a_provider_error_and_the_daemon_keeps_serving(
    provider: LocalProvider,  # noqa: F811
) -> None:
    provider.complete(_ask("Hi."), timeout=SLOW)
    pid = provider.daemon_pid
    # Its own class, so the runner can end a conversation that outgrew the window.
    with pytest.raises(ContextOverflowError) as info:
        provider.complete(_ask("lorem ipsum " * 3000), timeout=SLOW)
    assert not isinstance(info.value, ServerCrashedError)
    assert "context window is 4096 tokens" in str(info.value)
    assert "prompt is" in str(info.value)
    after = provider.complete(_ask("Say yes."), timeout=SLOW)
    assert after.usage.output_tokens > 0
    assert provider.daemon_pid == pid


def test_a_degenerate_loop_ends_with_stop_reason_repetition(provider: LocalProvider) -> None:  # noqa: F811
    # The grammar forces one string 200 times; the daemon must cut the loop short.
    schema = {
        "type": "array",
        "items": {"type": "string", "enum": ["zip"]},
        "minItems": 200,
        "maxItems": 200,
    }
    request = CompletionRequest(
        messages=[Message.user("List archive formats.")], json_schema=schema, max_tokens=600
    )
    response = provider.complete(request, timeout=SLOW)
    assert response.stop_reason == "repetition"
    assert 0 < response.usage.output_tokens < 200


def test_timeout_returns_stop_reason_timeout(provider: LocalProvider) -> None:  # noqa: F811
    provider.ensure_running()
    # Over a thousand tokens that cannot end early: no machine writes them in 0.5 s.
    response = provider.complete(unending_request(), timeout=0.5)
    assert response.stop_reason == "timeout"
    assert response.usage.output_tokens < UNENDING_MAX_TOKENS
    # The daemon stopped generating and serves the next request.
    assert provider.complete(_ask("Say yes."), timeout=SLOW).usage.output_tokens > 0


def _fake_package(root: Path, content: bytes) -> None:
    package = root / "fake_gguf_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "fake.gguf").write_bytes(content)


def test_sha_mismatch_is_refused_before_anything_loads(
    reap_daemons: None,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    evalctl_home: Path,
) -> None:
    _fake_package(tmp_path, b"GGUF not really a model")
    monkeypatch.syspath_prepend(str(tmp_path))
    fake = manifest.Manifest(
        default="fake",
        model=[
            manifest.ModelEntry(
                name="fake",
                description="a file whose hash does not match",
                package="fake_gguf_pkg",
                pip_requirement="fake-gguf-pkg==0",
                file="fake.gguf",
                size=23,
                sha256="0" * 64,
            )
        ],
    )
    monkeypatch.setattr(manifest, "load_manifest", lambda: fake)
    options = registry.ProviderOptions(
        settings=load_settings(env=os.environ), env=dict(os.environ), model="fake"
    )
    with pytest.raises(BadInputError) as info:
        registry.create("local", options)
    assert info.value.code == ExitCode.BAD_INPUT
    assert "SHA256 mismatch" in str(info.value)
    # Refused before any daemon was spawned.
    assert not list(evalctl_home.rglob("*.sock"))
    assert not list(evalctl_home.rglob("*.log"))


def test_registry_creates_the_local_provider_for_the_embedded_model(reap_daemons: None) -> None:  # noqa: F811
    options = registry.ProviderOptions(
        settings=load_settings(env=os.environ), env=dict(os.environ), extra={"threads": "1"}
    )
    created = registry.create("local", options)
    assert isinstance(created, LocalProvider)
    assert created.model_sha256 == embedded_model().expected_sha256
    created.close()


TWO_PROCESS_SCRIPT = textwrap.dedent(
    """
    import json, os, sys
    sys.path.insert(0, {root!r})
    from evalctl.chat import CompletionRequest, Message
    from tests.local_helpers import make_provider
    p = make_provider()
    r = p.complete(CompletionRequest(messages=[Message.user(sys.argv[1])], max_tokens=8),
                   timeout=180)
    print(json.dumps({{"pid": p.daemon_pid, "tokens": r.usage.output_tokens}}))
    p.close()
    """
)


def test_two_processes_share_one_daemon(reap_daemons: None, evalctl_home: Path) -> None:  # noqa: F811
    root = str(Path(__file__).resolve().parent.parent)
    script = TWO_PROCESS_SCRIPT.format(root=root)
    children = [
        subprocess.Popen(
            [sys.executable, "-c", script, text],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(os.environ),
        )
        for text in ("Say one.", "Say two.")
    ]
    results = []
    for child in children:
        out, err = child.communicate(timeout=SLOW * 2)
        assert child.returncode == 0, err.decode()
        results.append(json.loads(out.decode().strip().splitlines()[-1]))
    assert results[0]["pid"] == results[1]["pid"]
    assert all(r["tokens"] > 0 for r in results)
    assert procs.alive(results[0]["pid"])  # it outlives the processes that used it


def test_a_daemon_with_other_slots_is_restarted_for_a_run_that_asks_for_more(
    provider: LocalProvider,  # noqa: F811
) -> None:
    first = provider.ensure_running()
    assert first.n_parallel == 1
    two = make_provider(parallel=2, n_threads=1)
    try:
        status = two.ensure_running()
        assert status.n_parallel == 2
        assert status.pid != first.pid
        assert two.run_settings()["parallel"] == 2
        assert two.default_concurrency() == 2
    finally:
        two.stop_daemon(grace_s=2)
        two.close()
