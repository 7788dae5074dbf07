"""Convert between evalctl's chat types and the daemon's protobuf messages, both ways.

Used by the client (LocalProvider) and the servicer, so the two cannot drift apart.
Importing this pulls in protobuf but not grpc.
"""

from __future__ import annotations

import json
from typing import Any

from evalctl.chat import (
    GREEDY_TOP_P,
    CompletionRequest,
    CompletionResponse,
    Message,
    Role,
    StopReason,
    Timings,
    ToolCall,
    ToolDef,
    Usage,
)
from evalctl.server.gen import inference_pb2 as pb

_ROLE_TO_PB = {
    Role.SYSTEM: pb.ROLE_SYSTEM,
    Role.USER: pb.ROLE_USER,
    Role.ASSISTANT: pb.ROLE_ASSISTANT,
    Role.TOOL: pb.ROLE_TOOL,
}
_ROLE_FROM_PB = {v: k for k, v in _ROLE_TO_PB.items()}

_STOP_TO_PB: dict[StopReason, Any] = {
    "end_turn": pb.STOP_REASON_END_TURN,
    "tool_use": pb.STOP_REASON_TOOL_USE,
    "max_tokens": pb.STOP_REASON_MAX_TOKENS,
    "timeout": pb.STOP_REASON_TIMEOUT,
    "repetition": pb.STOP_REASON_REPETITION,
}
_STOP_FROM_PB: dict[Any, StopReason] = {v: k for k, v in _STOP_TO_PB.items()}


class ConversionError(ValueError):
    """A message cannot be represented on the other side (bad role, invalid JSON)."""


def _loads_object(text: str, what: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConversionError(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConversionError(f"{what} must be a JSON object")
    return value


def tool_call_to_pb(call: ToolCall) -> Any:
    return pb.ToolCall(id=call.id, name=call.name, arguments_json=json.dumps(call.arguments))


def tool_call_from_pb(call: Any) -> ToolCall:
    args = _loads_object(call.arguments_json, f"arguments of tool call {call.name!r}")
    return ToolCall(id=call.id, name=call.name, arguments=args)


def message_to_pb(message: Message) -> Any:
    return pb.Message(
        role=_ROLE_TO_PB[message.role],
        content=message.content,
        tool_calls=[tool_call_to_pb(c) for c in message.tool_calls],
        tool_call_id=message.tool_call_id or "",
        name=message.name or "",
        is_error=message.is_error,
    )


def message_from_pb(message: Any) -> Message:
    role = _ROLE_FROM_PB.get(message.role)
    if role is None:
        raise ConversionError(f"message has no valid role ({message.role})")
    return Message(
        role=role,
        content=message.content,
        tool_calls=[tool_call_from_pb(c) for c in message.tool_calls],
        tool_call_id=message.tool_call_id or None,
        name=message.name or None,
        is_error=message.is_error,
    )


def request_to_pb(request: CompletionRequest, *, timeout_s: float) -> Any:
    out = pb.CompleteRequest(
        messages=[message_to_pb(m) for m in request.messages],
        tools=[
            pb.ToolDef(
                name=t.name, description=t.description, parameters_json=json.dumps(t.parameters)
            )
            for t in request.tools
        ],
        tool_choice=request.tool_choice,
        json_schema=json.dumps(request.json_schema) if request.json_schema is not None else "",
        temperature=request.temperature,
        max_tokens=request.max_tokens,
        timeout_s=timeout_s,
        tag=request.tag,
        allow_repetition=request.allow_repetition,
    )
    if request.seed is not None:
        out.seed = request.seed
    out.top_p = request.top_p
    return out


def request_from_pb(request: Any, *, default_max_tokens: int) -> CompletionRequest:
    """The request as chat types; raises ConversionError for malformed fields."""
    try:
        return CompletionRequest(
            messages=[message_from_pb(m) for m in request.messages],
            tools=[
                ToolDef(
                    name=t.name,
                    description=t.description,
                    parameters=_loads_object(t.parameters_json, f"parameters of tool {t.name!r}")
                    or {"type": "object", "properties": {}},
                )
                for t in request.tools
            ],
            tool_choice=request.tool_choice or "auto",
            json_schema=_loads_object(request.json_schema, "json_schema")
            if request.json_schema
            else None,
            temperature=request.temperature,
            top_p=request.top_p if request.HasField("top_p") else GREEDY_TOP_P,
            max_tokens=request.max_tokens if request.max_tokens > 0 else default_max_tokens,
            seed=request.seed if request.HasField("seed") else None,
            tag=request.tag,
            allow_repetition=request.allow_repetition,
        )
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        if isinstance(exc, ConversionError):
            raise
        raise ConversionError(str(exc)) from None


def response_to_pb(response: CompletionResponse, *, queue_ms: float = 0.0) -> Any:
    timings = pb.Timings(total_ms=response.timings.total_ms, queue_ms=queue_ms)
    if response.timings.ttft_ms is not None:
        timings.ttft_ms = response.timings.ttft_ms
    if response.timings.tokens_per_s is not None:
        timings.tokens_per_s = response.timings.tokens_per_s
    return pb.CompleteResponse(
        content=response.content,
        tool_calls=[tool_call_to_pb(c) for c in response.tool_calls],
        stop_reason=_STOP_TO_PB[response.stop_reason],
        usage=pb.Usage(
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            cached_input_tokens=response.usage.cached_input_tokens,
        ),
        timings=timings,
        model=response.model,
    )


def response_from_pb(response: Any) -> CompletionResponse:
    timings = response.timings
    return CompletionResponse(
        content=response.content,
        tool_calls=[tool_call_from_pb(c) for c in response.tool_calls],
        stop_reason=_STOP_FROM_PB.get(response.stop_reason, "end_turn"),
        usage=Usage(
            input_tokens=response.usage.input_tokens,
            output_tokens=response.usage.output_tokens,
            cached_input_tokens=response.usage.cached_input_tokens,
        ),
        timings=Timings(
            ttft_ms=timings.ttft_ms if timings.HasField("ttft_ms") else None,
            total_ms=timings.total_ms,
            tokens_per_s=timings.tokens_per_s if timings.HasField("tokens_per_s") else None,
        ),
        model=response.model,
    )
