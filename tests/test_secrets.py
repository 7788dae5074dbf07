"""Redaction of API keys, and a provider run with a known fake key that leaves no trace."""

from __future__ import annotations

import html
import json
import logging
import random
from pathlib import Path

import pytest

from evalctl.chat import Message, ToolResult
from evalctl.cli.crashlog import save_traceback
from evalctl.config import load_settings
from evalctl.errors import ProviderError
from evalctl.fakes.llm_server import FakeLLMServer, Step
from evalctl.retry import RetryPolicy
from evalctl.secrets import RedactingFilter, redact, redact_data
from tests import cloud_helpers
from tests.cloud_helpers import ANTHROPIC_KEY, GOOGLE_KEY, OPENAI_KEY, WEATHER, ask


def test_redacts_values_from_the_given_env() -> None:
    env = {"ANTHROPIC_API_KEY": "my-secret-value-1", "GEMINI_API_KEY": "other-secret-22"}
    text = "a my-secret-value-1 b other-secret-22 c"
    assert redact(text, env) == "a [REDACTED:ANTHROPIC_API_KEY] b [REDACTED:GEMINI_API_KEY] c"


def test_redacts_values_from_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "process-wide-secret")
    assert "process-wide-secret" not in redact("x process-wide-secret y")


def test_redacts_key_shaped_strings_from_anywhere() -> None:
    text = f"header: Bearer {ANTHROPIC_KEY}; key={GOOGLE_KEY}; openai={OPENAI_KEY}"
    cleaned = redact(text, {})
    assert ANTHROPIC_KEY not in cleaned and GOOGLE_KEY not in cleaned
    assert OPENAI_KEY not in cleaned
    assert cleaned.count("[REDACTED:API_KEY]") == 3


def test_openai_key_is_redacted_by_value() -> None:
    env = {"OPENAI_API_KEY": "local-gateway-token"}
    assert redact("token local-gateway-token", env) == "token [REDACTED:OPENAI_API_KEY]"


def test_short_values_are_not_redacted_by_value() -> None:
    # A one-letter "key" must not blank out every "a" in a message.
    assert redact("a banana", {"ANTHROPIC_API_KEY": "a"}) == "a banana"


def test_longest_secret_wins_when_one_contains_another() -> None:
    env = {"ANTHROPIC_API_KEY": "secret-abc", "GOOGLE_API_KEY": "secret-abc-def"}
    assert redact("secret-abc-def", env) == "[REDACTED:GOOGLE_API_KEY]"


def test_redact_data_walks_nested_documents() -> None:
    env = {"ANTHROPIC_API_KEY": "nested-secret-1"}
    doc = {"error": "bad nested-secret-1", "list": ["nested-secret-1", 3], "n": None}
    assert redact_data(doc, env) == {
        "error": "bad [REDACTED:ANTHROPIC_API_KEY]",
        "list": ["[REDACTED:ANTHROPIC_API_KEY]", 3],
        "n": None,
    }


def test_logging_filter_redacts_formatted_records(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("evalctl.test.secrets")
    handler_filter = RedactingFilter({"GEMINI_API_KEY": "logged-secret-9"})
    caplog.handler.addFilter(handler_filter)
    try:
        with caplog.at_level(logging.INFO, logger=logger.name):
            logger.info("sending %s", "logged-secret-9")
    finally:
        caplog.handler.removeFilter(handler_filter)
    assert "logged-secret-9" not in caplog.text
    assert "[REDACTED:GEMINI_API_KEY]" in caplog.text


@pytest.mark.parametrize("provider_name", ["anthropic", "gemini", "openai"])
def test_a_run_with_a_known_key_leaves_no_trace(
    provider_name: str, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """Success, retried faults and an auth error that echoes the key: the key shows nowhere."""
    key = {"anthropic": ANTHROPIC_KEY, "gemini": GOOGLE_KEY, "openai": OPENAI_KEY}[provider_name]
    texts: list[str] = []
    with caplog.at_level(logging.DEBUG), FakeLLMServer() as server:
        make = getattr(cloud_helpers, provider_name)
        provider = make(server)
        server.enqueue(
            Step.tool("get_weather", {"city": "Oslo"}),
            Step.failing("malformed"),
            Step.failing("drop"),
            Step.failing("rate_limit", retry_after=0),
            Step.reply("done"),
            Step.failing("auth"),
        )
        retry = RetryPolicy(sleep=lambda _s: None, rng=random.Random(0), max_attempts=5)
        request = ask("weather in Oslo?", tools=[WEATHER])
        first = provider.complete(request, timeout=10)
        call = first.tool_calls[0]
        result = Message.tool_result(ToolResult(tool_call_id=call.id, name=call.name, content="-3"))
        follow_up = request.model_copy(
            update={"messages": [*request.messages, first.as_message(), result]}
        )
        retry.call(
            lambda: provider.complete(follow_up, timeout=10),
            on_retry=lambda _n, exc, _d: texts.append(f"{exc} {exc.hint} {exc!r}"),
        )
        with pytest.raises(ProviderError) as info:
            provider.complete(request, timeout=10)
        texts.append(f"{info.value} {info.value.hint} {info.value!r}")
        provider.close()
        # The key did reach the server (so the echo really contained it)...
        assert any(key in str(r.headers) for r in server.requests)
    # ...but none of our messages, output or logs carry it.
    assert len(texts) == 4
    captured = capsys.readouterr()
    for text in [*texts, captured.out, captured.err, caplog.text]:
        assert key not in text


def test_every_variable_whose_name_looks_secret_is_redacted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "planted-gh-value")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "planted-aws-value")
    monkeypatch.setenv("db_password", "planted-db-value")
    monkeypatch.setenv("SERVICE_CREDENTIALS", "planted-cred-value")
    monkeypatch.setenv("SHORT_TOKEN", "1")
    monkeypatch.setenv("BUILD_NUMBER", "planted-not-secret")
    text = redact("planted-gh-value planted-aws-value planted-db-value planted-cred-value 1")
    assert text == (
        "[REDACTED:GITHUB_TOKEN] [REDACTED:AWS_SECRET_ACCESS_KEY] [REDACTED:db_password] "
        "[REDACTED:SERVICE_CREDENTIALS] 1"
    )
    assert redact("planted-not-secret") == "planted-not-secret"


def test_redact_env_in_evalctl_toml_adds_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEPLOY_HOOK_URL", "https://hooks.example/planted")
    assert redact("to https://hooks.example/planted") == "to https://hooks.example/planted"
    project = tmp_path / "project"
    project.mkdir()
    (project / "evalctl.toml").write_text('redact_env = ["DEPLOY_HOOK_URL"]\n')
    try:
        load_settings(project)
        assert redact("to https://hooks.example/planted") == "to [REDACTED:DEPLOY_HOOK_URL]"
    finally:
        # A sibling folder: evalctl.toml is looked for upward, so not below the project.
        load_settings(tmp_path / "elsewhere")
    assert "planted" in redact("to https://hooks.example/planted")


def test_a_secret_is_redacted_in_its_json_and_html_escaped_forms(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("API_TOKEN", 'quote"and<angle>&amp')
    document = json.dumps({"echo": 'quote"and<angle>&amp'})
    assert "angle" not in redact(document)
    assert "angle" not in redact(html.escape('quote"and<angle>&amp'))


def test_the_internal_error_log_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "planted-in-a-traceback")
    try:
        raise RuntimeError("boom with planted-in-a-traceback")
    except RuntimeError as exc:
        saved = save_traceback(exc)
    assert saved is not None
    text = Path(saved).read_text()
    assert "boom with [REDACTED:GITHUB_TOKEN]" in text
    assert "planted-in-a-traceback" not in text
