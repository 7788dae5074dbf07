"""Provider-neutral chat types: what the runner sends to and gets back from any provider."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Role(StrEnum):
    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolDef(_Model):
    """A tool the model may call; `parameters` is a JSON Schema object."""

    name: str
    description: str
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})


class ToolCall(_Model):
    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResult(_Model):
    """The outcome of executing a ToolCall; sent back to the model as a `tool` message."""

    tool_call_id: str
    name: str
    content: str
    is_error: bool = False


class Message(_Model):
    role: Role
    content: str = ""
    # Set on assistant messages that requested tools.
    tool_calls: list[ToolCall] = Field(default_factory=list)
    # Set on tool messages: which call this answers, and the tool's name.
    tool_call_id: str | None = None
    name: str | None = None
    is_error: bool = False

    @classmethod
    def system(cls, content: str) -> Message:
        return cls(role=Role.SYSTEM, content=content)

    @classmethod
    def user(cls, content: str) -> Message:
        return cls(role=Role.USER, content=content)

    @classmethod
    def tool_result(cls, result: ToolResult) -> Message:
        return cls(
            role=Role.TOOL,
            content=result.content,
            tool_call_id=result.tool_call_id,
            name=result.name,
            is_error=result.is_error,
        )


ToolChoice = Literal["auto", "none", "required"] | str


class CompletionRequest(_Model):
    messages: list[Message]
    tools: list[ToolDef] = Field(default_factory=list)
    # "auto" | "none" | "required" | the name of one tool to force.
    tool_choice: ToolChoice = "auto"
    # When set, the reply must be a JSON document matching this schema.
    json_schema: dict[str, Any] | None = None
    temperature: float = 0.0
    max_tokens: int = 512
    seed: int | None = 0
    # Opaque per-request tag (the case key), used for logs and repro files.
    tag: str = ""
    # The local engine ends a degenerate loop (one n-gram repeating back to back) with
    # stop_reason "repetition"; True lets the reply run on (crash-test's request that must
    # still be generating when the daemon is killed).
    allow_repetition: bool = False


# "repetition": the local engine ended a degenerate loop (one n-gram repeating back to back).
StopReason = Literal["end_turn", "tool_use", "max_tokens", "timeout", "repetition"]


class Usage(_Model):
    input_tokens: int = 0
    output_tokens: int = 0
    # Of input_tokens, how many came from a cache instead of being evaluated again (the
    # local engine's KV-cache prefix reuse).
    cached_input_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
        )


class Timings(_Model):
    ttft_ms: float | None = None
    total_ms: float = 0.0
    tokens_per_s: float | None = None


class CompletionResponse(_Model):
    content: str = ""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    stop_reason: StopReason = "end_turn"
    usage: Usage = Field(default_factory=Usage)
    timings: Timings = Field(default_factory=Timings)
    model: str = ""

    def as_message(self) -> Message:
        return Message(role=Role.ASSISTANT, content=self.content, tool_calls=self.tool_calls)
