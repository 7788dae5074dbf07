"""Helpers for tests of the cloud providers: the real SDKs pointed at the fake LLM server."""

from __future__ import annotations

from typing import Any

from evalctl.chat import CompletionRequest, Message, ToolDef
from evalctl.config import Settings
from evalctl.fakes.llm_server import FakeLLMServer
from evalctl.providers.anthropic import AnthropicProvider
from evalctl.providers.gemini import GeminiProvider
from evalctl.providers.openai import OpenAIProvider
from evalctl.providers.registry import ProviderOptions, create

# Shaped like real keys, so both value-based and pattern-based redaction are exercised.
ANTHROPIC_KEY = "sk-ant-api03-TESTKEY-do-not-leak-0123456789abcdef"
GOOGLE_KEY = "AIzaSyTESTKEY-do-not-leak-0123456789abcd"
OPENAI_KEY = "sk-test-TESTKEY-do-not-leak-0123456789abcdef"

WEATHER = ToolDef(
    name="get_weather",
    description="Current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
TIME = ToolDef(
    name="get_time",
    description="Local time in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def options(server: FakeLLMServer, model: str | None = None) -> ProviderOptions:
    return ProviderOptions(
        settings=Settings(),
        env=server.env(anthropic_key=ANTHROPIC_KEY, google_key=GOOGLE_KEY, openai_key=OPENAI_KEY),
        model=model,
    )


def anthropic(server: FakeLLMServer, model: str = "claude-test") -> AnthropicProvider:
    provider = create("anthropic", options(server, model))
    assert isinstance(provider, AnthropicProvider)
    return provider


def gemini(server: FakeLLMServer, model: str = "gemini-test") -> GeminiProvider:
    provider = create("gemini", options(server, model))
    assert isinstance(provider, GeminiProvider)
    return provider


def openai(server: FakeLLMServer, model: str | None = "gpt-test") -> OpenAIProvider:
    provider = create("openai", options(server, model))
    assert isinstance(provider, OpenAIProvider)
    return provider


def ask(prompt: str, **kwargs: Any) -> CompletionRequest:
    return CompletionRequest(
        messages=[Message.system("You are terse."), Message.user(prompt)], **kwargs
    )
