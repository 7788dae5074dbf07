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

# Greedy decoding, the default everywhere: temperature 0 picks the most likely token, so
# top_p and the seed change nothing, but they are still fixed so that a suite that turns the
# temperature up gets reproducible samples.
GREEDY_TEMPERATURE = 0.0
GREEDY_TOP_P = 1.0
GREEDY_SEED = 0


class Sampling(_Model):
    """How the next token is drawn. In a request every field is set; in results, a field
    is None where the provider did not send it (Anthropic's API takes none of them)."""

    temperature: float | None = GREEDY_TEMPERATURE
    top_p: float | None = GREEDY_TOP_P
    seed: int | None = GREEDY_SEED


class CompletionRequest(_Model):
    messages: list[Message]
    tools: list[ToolDef] = Field(default_factory=list)
    # "auto" | "none" | "required" | the name of one tool to force.
    tool_choice: ToolChoice = "auto"
    # When set, the reply must be a JSON document matching this schema.
    json_schema: dict[str, Any] | None = None
    temperature: float = GREEDY_TEMPERATURE
    # Nucleus sampling: only the most likely tokens whose probabilities sum to top_p are
    # drawn from; 1 keeps them all.
    top_p: float = GREEDY_TOP_P
    max_tokens: int = 512
    # None: a fresh random seed (the local engine); the runner always sends one.
    seed: int | None = GREEDY_SEED
    # Opaque per-request tag (the case key), used for logs and repro files.
    tag: str = ""
    # The local engine ends a degenerate loop (one n-gram repeating back to back) with
    # stop_reason "repetition"; True lets the reply run on (crash-test's request that must
    # still be generating when the daemon is killed).
    allow_repetition: bool = False

    @property
    def sampling(self) -> Sampling:
        return Sampling(temperature=self.temperature, top_p=self.top_p, seed=self.seed)


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
