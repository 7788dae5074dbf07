"""The scripted provider replays replies per case and turn, and injects faults on request."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalctl.chat import CompletionRequest, CompletionResponse, Message
from evalctl.errors import BadInputError, ProviderError, ServerCrashedError, TransientProviderError
from evalctl.providers.scripted import ScriptedProvider, load_script

SCRIPT = """
model = "demo"

[[default]]
content = "default reply"

[[cases."s/one"]]
tool_calls = [{ name = "lookup", arguments = { q = "x" } }]

[[cases."s/one"]]
content = "done"

[[cases.two]]
error = "transient"

[[cases.three]]
error = "crash"

[[cases.four]]
error = "permanent"
"""


@pytest.fixture
def provider(tmp_path: Path) -> ScriptedProvider:
    path = tmp_path / "script.toml"
    path.write_text(SCRIPT)
    return ScriptedProvider(load_script(path))


def _ask(provider: ScriptedProvider, tag: str, assistant_turns: int = 0) -> CompletionResponse:
    messages = [Message.user("q")]
    messages += [Message(role="assistant", content="a")] * assistant_turns
    return provider.complete(CompletionRequest(messages=messages, tag=tag), timeout=5)


def test_replies_follow_the_turn_number(provider: ScriptedProvider) -> None:
    first = _ask(provider, "s/one")
    assert first.stop_reason == "tool_use"
    assert first.tool_calls[0].name == "lookup"
    assert first.tool_calls[0].arguments == {"q": "x"}
    second = _ask(provider, "s/one", assistant_turns=1)
    assert second.content == "done"
    assert second.stop_reason == "end_turn"
    # Past the end of the list the last reply repeats.
    assert _ask(provider, "s/one", assistant_turns=5).content == "done"


def test_unknown_case_gets_the_default(provider: ScriptedProvider) -> None:
    assert _ask(provider, "s/unknown").content == "default reply"
    assert provider.model == "demo"


def test_faults_map_to_error_classes(provider: ScriptedProvider) -> None:
    with pytest.raises(TransientProviderError):
        _ask(provider, "s/two")
    with pytest.raises(ServerCrashedError):
        _ask(provider, "s/three")
    with pytest.raises(ProviderError) as info:
        _ask(provider, "s/four")
    assert not isinstance(info.value, TransientProviderError)


def test_bad_script_names_file_case_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[[cases."s/x"]]\ncontnet = "typo"\n')
    with pytest.raises(BadInputError) as info:
        load_script(path)
    message = info.value.message
    assert str(path) in message
    assert "s/x" in message
    assert "contnet" in message
