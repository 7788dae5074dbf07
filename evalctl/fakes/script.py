"""What the fake LLM server answers: scripted steps, conversation rules and injected faults.

A script file (TOML or JSON) for `python -m evalctl.fakes.llm_server --script FILE`::

    latency_ms = 50                      # added to every normal reply

    [[queue]]                            # consumed in order by the next requests, any API
    fault = "rate_limit"
    retry_after = 1

    [[conversations]]                    # chosen by a substring of the first user message;
    match = "weather in Paris"           # the turn is the number of assistant turns so far
    [[conversations.turns]]
    tool_calls = [{ name = "get_weather", arguments = { city = "Paris" } }]
    [[conversations.turns]]
    text = "Sunny, 21 C."

    [default]                            # anything else
    text = "ok"

Faults: `rate_limit` (429 + retry-after), `server_error` (500), `overloaded` (529 Anthropic,
503 UNAVAILABLE Gemini: each API's own overload signal), `unavailable` (503), `slow` (the reply
comes after `latency_ms`, default 5 s: past a client's timeout), `drop` (the connection is
closed without a response), `malformed` (200 with a truncated JSON body), `bad_request` (400)
and `auth` (an authentication error whose message echoes the credential it received, as a
careless gateway would: tests use it to prove keys are redacted).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalctl import userfiles
from evalctl.errors import BadInputError

FaultKind = Literal[
    "rate_limit",
    "server_error",
    "overloaded",
    "unavailable",
    "slow",
    "drop",
    "malformed",
    "bad_request",
    "auth",
]

DEFAULT_SLOW_MS = 5000.0


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCallSpec(_Model):
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    # Anthropic always gets an id (generated when unset); Gemini only when set, like the real
    # API, which leaves function-call ids out for most models.
    id: str | None = None


class Step(_Model):
    """One reply (or one fault) the server sends."""

    text: str = ""
    tool_calls: list[ToolCallSpec] = Field(default_factory=list)
    stop_reason: Literal["end_turn", "max_tokens"] | None = None
    input_tokens: int | None = None  # default: estimated from the request size
    output_tokens: int | None = None  # default: estimated from the reply
    latency_ms: float | None = None  # default: the server's latency
    fault: FaultKind | None = None
    retry_after: float | None = None  # seconds; for `rate_limit`
    # OpenAI's `system_fingerprint` on the reply (the backend that served it); None: absent.
    system_fingerprint: str | None = None

    @classmethod
    def reply(cls, text: str, **kwargs: Any) -> Step:
        return cls(text=text, **kwargs)

    @classmethod
    def tool(cls, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any) -> Step:
        return cls(tool_calls=[ToolCallSpec(name=name, arguments=arguments or {})], **kwargs)

    @classmethod
    def failing(cls, fault: FaultKind, **kwargs: Any) -> Step:
        return cls(fault=fault, **kwargs)


class Conversation(_Model):
    match: str  # a substring of the first user message
    turns: list[Step]


class ServerScript(_Model):
    """The fake LLM server's script (what `FakeLLMServer` answers), not the
    scripted provider's reply script (`providers.scripted.Script`)."""

    latency_ms: float = 0.0
    queue: list[Step] = Field(default_factory=list)
    conversations: list[Conversation] = Field(default_factory=list)
    default: Step = Field(default_factory=lambda: Step(text="ok"))


def load_script(path: Path) -> ServerScript:
    data = userfiles.read_toml_or_json(path, what="script")
    try:
        return ServerScript.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise BadInputError(
            userfiles.validation_message(err),
            file=str(path),
            field=userfiles.field_path(err["loc"]) or None,
        ) from None
