"""The wire formats the fake server speaks: request views and response/error bodies.

Only what the SDKs need to parse a reply is produced; the shapes follow the public API
references (Anthropic Messages `POST /v1/messages`, Gemini `models/{model}:generateContent`,
OpenAI chat completions `POST /v1/chat/completions`, plain JSON or a server-sent-event stream,
and `GET /v1/models`), and the embedding endpoints: OpenAI `POST /v1/embeddings` (vectors as
float lists or, with `encoding_format` base64 as the openai SDK asks by default, base64
little-endian float32), Gemini `models/{model}:batchEmbedContents` (what google-genai's
`embed_content` sends, one or many texts) and `:embedContent`. Their vectors are the fake
embedder's (evalctl.fakes.embedder), 256 components unless the request asks for
`dimensions` / `outputDimensionality`.
"""

from __future__ import annotations

import base64
import json
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Literal

from evalctl.fakes.embedder import DIMENSIONS, fake_vector, words
from evalctl.fakes.script import FaultKind, Step

Api = Literal["anthropic", "gemini", "openai", "unknown"]

_GEMINI_PATH = re.compile(r"/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$")
_GEMINI_METHODS = frozenset({"generateContent", "embedContent", "batchEmbedContents"})
_GEMINI_EMBEDDING_METHODS = frozenset({"embedContent", "batchEmbedContents"})


def route(path: str) -> tuple[Api, str | None]:
    """Which API a request path belongs to, and the model named in a Gemini path."""
    bare = path.split("?", 1)[0]
    if bare.endswith("/v1/messages"):
        return "anthropic", None
    if bare.endswith(("/chat/completions", "/embeddings")):
        return "openai", None
    match = _GEMINI_PATH.search(bare)
    if match and match["method"] in _GEMINI_METHODS:
        return "gemini", match["model"]
    return "unknown", None


def is_embedding(req: RecordedRequest) -> bool:
    """An embedding request (OpenAI `/embeddings`, Gemini `:embedContent` or
    `:batchEmbedContents`), rather than a chat turn."""
    bare = req.path.split("?", 1)[0]
    if req.api == "openai":
        return bare.endswith("/embeddings")
    match = _GEMINI_PATH.search(bare)
    return (
        req.api == "gemini" and match is not None and match["method"] in _GEMINI_EMBEDDING_METHODS
    )


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received, kept for tests to assert on."""

    api: Api
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    raw: bytes
    body: Any  # parsed JSON, or None when the body was not JSON
    model: str
    seq: int  # arrival order, from 0
    extra: dict[str, Any] = field(default_factory=dict)

    def _turns(self) -> list[dict[str, Any]]:
        if not isinstance(self.body, dict):
            return []
        key = "contents" if self.api == "gemini" else "messages"
        turns = self.body.get(key)
        return [t for t in turns if isinstance(t, dict)] if isinstance(turns, list) else []

    def first_user_text(self) -> str:
        for turn in self._turns():
            if turn.get("role") == "user":
                return _text_of(turn, self.api)
        return ""

    def assistant_turns(self) -> int:
        role = "model" if self.api == "gemini" else "assistant"
        return sum(1 for turn in self._turns() if turn.get("role") == role)

    def turns(self) -> list[dict[str, Any]]:
        """The conversation as sent: Anthropic/OpenAI `messages` or Gemini `contents`."""
        return self._turns()


def _text_of(turn: dict[str, Any], api: Api) -> str:
    if api in ("anthropic", "openai"):
        content = turn.get("content")
        if isinstance(content, str):
            return content
        blocks = content if isinstance(content, list) else []
        return "".join(
            b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
        )
    parts = turn.get("parts")
    return "".join(
        p.get("text", "") for p in (parts if isinstance(parts, list) else []) if isinstance(p, dict)
    )


def _estimate_input_tokens(req: RecordedRequest) -> int:
    # About four bytes a token: good enough for cost arithmetic in tests.
    return max(1, len(req.raw) // 4)


def _estimate_output_tokens(step: Step) -> int:
    return len(step.text.split()) + 8 * len(step.tool_calls) or 1


def anthropic_message(step: Step, req: RecordedRequest, seq: int) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if step.text:
        content.append({"type": "text", "text": step.text})
    for i, call in enumerate(step.tool_calls):
        content.append(
            {
                "type": "tool_use",
                "id": call.id or f"toolu_fake_{seq:04d}_{i}",
                "name": call.name,
                "input": call.arguments,
            }
        )
    if step.stop_reason == "max_tokens":
        stop = "max_tokens"
    else:
        stop = "tool_use" if step.tool_calls else "end_turn"
    return {
        "id": f"msg_fake_{seq:04d}",
        "type": "message",
        "role": "assistant",
        "model": req.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": step.input_tokens or _estimate_input_tokens(req),
            "output_tokens": step.output_tokens or _estimate_output_tokens(step),
        },
    }


def gemini_response(step: Step, req: RecordedRequest, seq: int) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if step.text:
        parts.append({"text": step.text})
    for i, call in enumerate(step.tool_calls):
        function_call: dict[str, Any] = {"name": call.name, "args": call.arguments}
        if call.id:
            function_call["id"] = call.id
        part: dict[str, Any] = {"functionCall": function_call}
        if i == 0:
            # Thinking models sign their first function call; the client must send the
            # signature back with that part on the next turn.
            part["thoughtSignature"] = base64.b64encode(f"fake-sig-{seq}".encode()).decode()
        parts.append(part)
    input_tokens = step.input_tokens or _estimate_input_tokens(req)
    output_tokens = step.output_tokens or _estimate_output_tokens(step)
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": parts},
                "finishReason": "MAX_TOKENS" if step.stop_reason == "max_tokens" else "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": input_tokens,
            "candidatesTokenCount": output_tokens,
            "totalTokenCount": input_tokens + output_tokens,
        },
        "modelVersion": req.model,
        "responseId": f"fake-{seq:04d}",
    }


def _openai_finish(step: Step) -> str:
    if step.stop_reason == "max_tokens":
        return "length"
    return "tool_calls" if step.tool_calls else "stop"


def _openai_calls(step: Step, seq: int) -> list[dict[str, Any]]:
    return [
        {
            "id": call.id or f"call_fake_{seq:04d}_{i}",
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
        }
        for i, call in enumerate(step.tool_calls)
    ]


def _openai_usage(step: Step, req: RecordedRequest) -> dict[str, int]:
    input_tokens = step.input_tokens or _estimate_input_tokens(req)
    output_tokens = step.output_tokens or _estimate_output_tokens(step)
    return {
        "prompt_tokens": input_tokens,
        "completion_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
    }


def openai_completion(step: Step, req: RecordedRequest, seq: int) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
    if step.tool_calls:
        message["tool_calls"] = _openai_calls(step, seq)
    return {
        "id": f"chatcmpl-fake-{seq:04d}",
        "object": "chat.completion",
        "created": 1_700_000_000 + seq,
        "model": req.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": _openai_finish(step),
                "logprobs": None,
            }
        ],
        "usage": _openai_usage(step, req),
        **_fingerprint(step),
    }


def _fingerprint(step: Step) -> dict[str, str]:
    return {"system_fingerprint": step.system_fingerprint} if step.system_fingerprint else {}


def openai_stream(step: Step, req: RecordedRequest, seq: int, *, usage: bool) -> bytes:
    """The same reply as server-sent events: role, text in word-sized pieces, tool calls in
    two pieces each (name, then arguments), the finish reason, the usage chunk when the
    request asked for it (and the server reports it), then `[DONE]`."""
    base = {
        "id": f"chatcmpl-fake-{seq:04d}",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000 + seq,
        "model": req.model,
        **_fingerprint(step),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    events: list[dict[str, Any]] = [chunk({"role": "assistant", "content": ""})]
    words = re.findall(r"\S+\s*|\s+", step.text)
    events.extend(chunk({"content": word}) for word in words)
    for i, call in enumerate(_openai_calls(step, seq)):
        head = {"index": i, "id": call["id"], "type": "function"}
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {**head, "function": {"name": call["function"]["name"], "arguments": ""}}
                    ]
                }
            )
        )
        args = {"index": i, "function": {"arguments": call["function"]["arguments"]}}
        events.append(chunk({"tool_calls": [args]}))
    events.append(chunk({}, _openai_finish(step)))
    options = req.body.get("stream_options") if isinstance(req.body, dict) else None
    if usage and isinstance(options, dict) and options.get("include_usage"):
        events.append({**base, "choices": [], "usage": _openai_usage(step, req)})
    lines = [f"data: {json.dumps(event)}\n\n" for event in events]
    lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def openai_models(model: str) -> bytes:
    entry = {"id": model, "object": "model", "created": 1_700_000_000, "owned_by": "fake"}
    return json.dumps({"object": "list", "data": [entry]}).encode()


def _dimensions(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else DIMENSIONS


def _openai_input(body: dict[str, Any]) -> list[str]:
    # `input` is one string or a list of them (token-id lists are not faked).
    given = body.get("input")
    texts = [given] if isinstance(given, str) else given if isinstance(given, list) else []
    return [t for t in texts if isinstance(t, str)]


def openai_embeddings(req: RecordedRequest) -> dict[str, Any]:
    body = req.body if isinstance(req.body, dict) else {}
    texts = _openai_input(body)
    dimensions = _dimensions(body.get("dimensions"))
    as_base64 = body.get("encoding_format") == "base64"
    data = []
    for index, text in enumerate(texts):
        vector = fake_vector(text, dimensions)
        packed = struct.pack(f"<{len(vector)}f", *vector)
        embedding: Any = base64.b64encode(packed).decode() if as_base64 else vector
        data.append({"object": "embedding", "index": index, "embedding": embedding})
    tokens = sum(len(words(t)) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": req.model,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _gemini_text(request: Any) -> str:
    content = request.get("content") if isinstance(request, dict) else None
    parts = content.get("parts") if isinstance(content, dict) else None
    return "".join(
        p.get("text", "") for p in (parts if isinstance(parts, list) else []) if isinstance(p, dict)
    )


def _gemini_vector(request: Any) -> dict[str, Any]:
    size = request.get("outputDimensionality") if isinstance(request, dict) else None
    return {"values": fake_vector(_gemini_text(request), _dimensions(size))}


def gemini_embeddings(req: RecordedRequest) -> dict[str, Any]:
    body = req.body if isinstance(req.body, dict) else {}
    if req.path.split("?", 1)[0].endswith(":embedContent"):
        return {"embedding": _gemini_vector(body)}
    requests = body.get("requests")
    return {"embeddings": [_gemini_vector(r) for r in (requests or [])]}


def success_body(step: Step, req: RecordedRequest, seq: int) -> dict[str, Any]:
    if is_embedding(req):
        return gemini_embeddings(req) if req.api == "gemini" else openai_embeddings(req)
    if req.api == "gemini":
        return gemini_response(step, req, seq)
    if req.api == "openai":
        return openai_completion(step, req, seq)
    return anthropic_message(step, req, seq)


# fault -> (Anthropic status, Anthropic error type, Gemini status, Gemini status name)
_ERRORS: dict[FaultKind, tuple[int, str, int, str]] = {
    "rate_limit": (429, "rate_limit_error", 429, "RESOURCE_EXHAUSTED"),
    "server_error": (500, "api_error", 500, "INTERNAL"),
    "overloaded": (529, "overloaded_error", 503, "UNAVAILABLE"),
    "unavailable": (503, "api_error", 503, "UNAVAILABLE"),
    "bad_request": (400, "invalid_request_error", 400, "INVALID_ARGUMENT"),
    "auth": (401, "authentication_error", 400, "INVALID_ARGUMENT"),
}
# fault -> (OpenAI status, OpenAI error type); OpenAI signals overload with a 503.
_OPENAI_ERRORS: dict[FaultKind, tuple[int, str]] = {
    "rate_limit": (429, "rate_limit_exceeded"),
    "server_error": (500, "server_error"),
    "overloaded": (503, "server_error"),
    "unavailable": (503, "server_error"),
    "bad_request": (400, "invalid_request_error"),
    "auth": (401, "invalid_request_error"),
}


def is_error_fault(fault: FaultKind | None) -> bool:
    return fault in _ERRORS


def _credential(req: RecordedRequest) -> str:
    if req.api == "gemini":
        return req.headers.get("x-goog-api-key", "")
    # Anthropic's SDK and OpenAI's both send `Authorization: Bearer <key>`.
    auth = req.headers.get("authorization", "")
    return auth.removeprefix("Bearer ") or req.headers.get("x-api-key", "")


def error_response(
    fault: FaultKind, step: Step, req: RecordedRequest
) -> tuple[int, dict[str, str], bytes]:
    """Status, extra headers and body for an HTTP-level fault."""
    a_status, a_type, g_status, g_name = _ERRORS[fault]
    message = f"fake {fault.replace('_', ' ')}"
    if fault == "auth":
        message = f"invalid API key: {_credential(req)!r}"
    headers: dict[str, str] = {}
    retry_after = step.retry_after if step.retry_after is not None else 1.0
    if req.api == "gemini":
        error: dict[str, Any] = {"code": g_status, "message": message, "status": g_name}
        if fault == "rate_limit":
            # Google puts the delay in a RetryInfo detail rather than a header.
            retry_info = "type.googleapis.com/google.rpc.RetryInfo"
            error["details"] = [{"@type": retry_info, "retryDelay": f"{retry_after:g}s"}]
        return g_status, headers, json.dumps({"error": error}).encode()
    if fault == "rate_limit":
        headers["retry-after"] = f"{retry_after:g}"
    if req.api == "openai":
        o_status, o_type = _OPENAI_ERRORS[fault]
        error = {"message": message, "type": o_type, "param": None, "code": None}
        return o_status, headers, json.dumps({"error": error}).encode()
    body = {"type": "error", "error": {"type": a_type, "message": message}}
    return a_status, headers, json.dumps(body).encode()


def not_found(path: str) -> bytes:
    return json.dumps({"error": {"code": 404, "message": f"no fake route for {path}"}}).encode()


MALFORMED_BODY = b'{"id": "msg_trunc'
# A stream whose first event is cut off mid-JSON.
MALFORMED_STREAM = b'data: {"id": "chatcmpl_trunc\n\ndata: [DONE]\n\n'


def rejects_json_schema(req: RecordedRequest) -> bytes | None:
    """What llama-cpp-python's server (0.3.36) answers, with a 500, when a request asks for
    `response_format` type json_schema, which it lacks; None for any other request."""
    body = req.body if isinstance(req.body, dict) else {}
    fmt = body.get("response_format")
    if not (isinstance(fmt, dict) and fmt.get("type") == "json_schema"):
        return None
    detail = {
        "type": "literal_error",
        "loc": ["body", "response_format", "type"],
        "msg": "Input should be 'text' or 'json_object'",
        "input": "json_schema",
    }
    message = f"1 validation error:\n  {detail}"
    return json.dumps({"error": {"message": message, "type": "internal_server_error"}}).encode()
