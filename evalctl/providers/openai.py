"""Any OpenAI-compatible chat-completions endpoint through the official `openai` SDK.

One provider covers OpenAI itself and the servers that speak its wire format: vLLM, TGI,
Ollama, LM Studio, llama.cpp's server (and llama-cpp-python's). Configuration comes from the
provider options' env: `OPENAI_BASE_URL` (default: OpenAI) and `OPENAI_API_KEY` (optional: a
local server without one gets no Authorization header at all).

Mapping from evalctl's chat types:

* system / user / assistant / tool messages map one to one; assistant tool calls go back with
  their ids and JSON-encoded arguments; a tool result is a `tool` message keyed by
  `tool_call_id` (the API has no error flag: the spy's `error: ...` text says it);
* `tool_choice`: auto / none / required as strings, a tool name -> that function;
* `temperature`, `top_p`, `seed` and `max_tokens` are sent as given (`max_tokens`, not
  `max_completion_tokens`: every compatible server knows the former);
* the reply's `system_fingerprint` (the backend configuration that served it), where the
  server sends one, is kept for the results' platform record (`platform_info()`);
* `json_schema`: first as `response_format` type `json_schema` (structured outputs: OpenAI,
  vLLM, Ollama, LM Studio). A server that rejects that type with an error naming
  `response_format` (llama-cpp-python's server: a 500) gets JSON mode instead, from then on:
  `{"type": "json_object", "schema": ...}` (servers that know the `schema` key, llama.cpp's
  among them, constrain decoding to it) plus the schema in the system prompt. Either way
  the scorer validates the reply against the case's schema;
* finish reasons: stop / content_filter -> end_turn; tool_calls / function_call -> tool_use;
  length -> max_tokens.

Replies are streamed, so `timings.ttft_ms` is the time to the first content or tool-call
delta, with `stream_options.include_usage` for token counts. A server whose stream carries no
usage (llama.cpp's servers) gets that one request again without streaming, and every later
request unstreamed: token counts and cost matter more than TTFT.

Embeddings (`embed()`): `POST /embeddings` through `client.embeddings.create`, asking for
float lists (`encoding_format` "float": every compatible server speaks it, not all the SDK's
default base64), at most 2,048 texts a request (OpenAI's limit), vectors as the server sends
them (OpenAI's are unit length). The model: `[providers] openai_embedding_model`, else
text-embedding-3-small on OpenAI itself and, on a compatible server, the provider's model
(the one the server serves).

The client is built with `max_retries=0`: the shared `evalctl.retry.RetryPolicy` is the only
retry layer. Errors are classified in `evalctl.providers.cloud`; a stream that breaks or turns
to an error event half-way is transient, like a dropped connection.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalctl.chat import (
    CompletionRequest,
    CompletionResponse,
    Message,
    Role,
    StopReason,
    ToolCall,
    ToolDef,
    Usage,
)
from evalctl.embeddings import Embeddings
from evalctl.errors import ProviderError, ProviderUnavailableError, TransientProviderError
from evalctl.providers.base import CHAT_AND_EMBEDDINGS, Provider, missing_package
from evalctl.providers.cloud import (
    check_vector_count,
    embedding_batches,
    malformed_body,
    parse_retry_after,
    redaction_env,
    status_error,
    timings,
    transport_error,
    transport_exceptions,
)
from evalctl.providers.options import ProviderOptions
from evalctl.secrets import redact

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Used only against OpenAI itself when neither --model nor `[providers] openai_model` is set;
# a compatible server is asked which model it serves instead.
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
# Embeddings on OpenAI itself when `[providers] openai_embedding_model` is not set.
DEFAULT_EMBEDDING_MODEL = "text-embedding-3-small"
# The most inputs one embeddings request may carry on OpenAI.
EMBED_BATCH = 2048
KEY_VARS = "OPENAI_API_KEY"
MODEL_HINT = "--model, or [providers] openai_model in evalctl.toml"

_STOP: dict[str, StopReason] = {
    "stop": "end_turn",
    "content_filter": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


def json_instruction(schema: dict[str, Any]) -> str:
    return (
        "Reply with only a JSON document (no prose, no code fence) that matches this JSON "
        f"Schema:\n{json.dumps(schema, sort_keys=True)}"
    )


def wire_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role is Role.ASSISTANT:
            # A string even when the turn is only tool calls: OpenAI also takes null or no
            # content, but llama-cpp-python's server rejects null and its chat templates fail
            # on a missing one (both measured).
            item: dict[str, Any] = {"role": "assistant", "content": msg.content}
            if msg.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                    }
                    for c in msg.tool_calls
                ]
            wire.append(item)
        elif msg.role is Role.TOOL:
            wire.append(
                {"role": "tool", "tool_call_id": msg.tool_call_id or "", "content": msg.content}
            )
        else:
            wire.append({"role": str(msg.role), "content": msg.content})
    return wire


def wire_tools(tools: Sequence[ToolDef]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def wire_tool_choice(choice: str) -> str | dict[str, Any]:
    if choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


def parse_arguments(raw: str) -> dict[str, Any]:
    """A tool call's JSON arguments; a fence or prose around the object is tolerated, and
    arguments that are no JSON object at all become {} (the tool then reports what is
    missing)."""
    start, end = raw.find("{"), raw.rfind("}")
    for candidate in (raw, raw[start : end + 1] if 0 <= start < end else ""):
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return {}


def rejects_json_schema(exc: openai.APIStatusError) -> bool:
    """An error that names `response_format`: the server lacks structured outputs.

    400 and 422 are the usual answers; llama-cpp-python's server wraps its validation error
    in a 500 (measured: 0.3.36), so a 500 that names the field counts too.
    """
    if exc.status_code not in (400, 422, 500):
        return False
    return "response_format" in f"{exc.message} {exc.body}"


def _sse_data(lines: Iterable[str]) -> Iterator[str]:
    """The data of each server-sent event (its `data:` lines joined), comments and other
    fields skipped, as the SDK's decoder reads them."""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        yield "\n".join(data)


@dataclass
class _Collected:
    """A reply assembled from stream chunks."""

    content: list[str] = field(default_factory=list)
    calls: dict[int, dict[str, Any]] = field(default_factory=dict)
    finish: str | None = None
    usage: Usage | None = None
    model: str = ""
    ttft_ms: float | None = None
    fingerprint: str | None = None


class OpenAIProvider(Provider):
    name = "openai"
    summary = "OpenAI or any OpenAI-compatible server (vLLM, Ollama, llama.cpp) via the openai SDK"
    capabilities = CHAT_AND_EMBEDDINGS
    # Usually a serving cluster (vLLM, TGI) built for parallel load.
    concurrent = True
    # Priced only when the model is in the price table: a model on one's own vLLM or
    # llama.cpp server has no entry, so no estimate.
    billed = True
    detect_env = ("OPENAI_BASE_URL", "OPENAI_API_KEY")

    def __init__(
        self,
        *,
        model: str,
        api_key: str | None,
        base_url: str,
        env: Mapping[str, str],
        organization: str | None = None,
        project: str | None = None,
        embedding_model: str | None = None,
    ):
        import openai

        self._model = model
        # None: the chat model (a compatible server serving one model).
        self._embedding_model = embedding_model
        self._env = redaction_env(env)
        # No key (a local server needs none): a callable returning "" keeps the SDK from
        # demanding one, and each request omits the Authorization header explicitly, as the
        # SDK requires.
        key: str | Callable[[], str] = api_key or (lambda: "")
        self._headers: dict[str, Any] = {} if api_key else {"Authorization": openai.Omit()}
        self._client: openai.OpenAI = openai.OpenAI(
            api_key=key,
            base_url=base_url,
            organization=organization,
            project=project,
            max_retries=0,
        )
        self._lock = threading.Lock()
        # What this endpoint turned out to support; learnt once per run, then kept.
        self._structured_outputs = True
        self._stream = True
        self._fingerprints: set[str] = set()

    @property
    def model(self) -> str:
        return self._model

    @classmethod
    def unavailable_reason(cls, options: ProviderOptions) -> str | None:
        # A compatible server needs only its URL; OpenAI itself needs only the key.
        if not (options.env.get("OPENAI_BASE_URL") or options.env.get("OPENAI_API_KEY")):
            return "neither OPENAI_BASE_URL (an OpenAI-compatible server) nor OPENAI_API_KEY is set"
        return missing_package("openai", "pip install 'evalctl[openai]'")

    @property
    def embedding_model(self) -> str:
        return self._embedding_model or self._model

    # -- embeddings ---------------------------------------------------------------------

    def embed(self, texts: Sequence[str], *, timeout: float) -> Embeddings:
        """One vector per text, in order, from the embeddings endpoint."""
        vectors: list[list[float]] = []
        tokens: int | None = 0
        model = self.embedding_model
        for batch, remaining in embedding_batches(self.name, texts, EMBED_BATCH, timeout):
            reply = self._embed_batch(batch, remaining)
            data = sorted(reply.data, key=lambda item: item.index)
            check_vector_count(self.name, len(batch), len(data))
            vectors.extend([float(x) for x in item.embedding] for item in data)
            model = reply.model or model
            usage = reply.usage
            tokens = None if tokens is None or usage is None else tokens + usage.prompt_tokens
        return Embeddings(vectors, model, None, tokens)

    def _embed_batch(self, texts: list[str], timeout: float) -> Any:
        import openai

        failure: ProviderError | None = None
        # As in `_call`: built inside `except`, raised after it, unchained.
        try:
            return self._client.embeddings.create(
                model=self.embedding_model,
                input=texts,
                encoding_format="float",
                timeout=timeout,
                extra_headers=self._headers,
            )
        except openai.APIStatusError as exc:
            failure = self._status_failure(exc)
        except openai.APIConnectionError as exc:  # includes APITimeoutError
            failure = transport_error(self.name, exc, env=self._env, timeout=timeout)
        except (json.JSONDecodeError, openai.APIResponseValidationError, ValueError) as exc:
            # The SDK raises ValueError for a reply without data.
            failure = malformed_body(self.name, exc, env=self._env)
        except transport_exceptions() as exc:
            failure = transport_error(self.name, exc, env=self._env, timeout=timeout)
        except openai.OpenAIError as exc:
            failure = ProviderError(redact(f"{self.name}: {exc}", self._env))
        assert failure is not None
        raise failure

    # -- request ------------------------------------------------------------------------

    def _params(self, request: CompletionRequest, structured: bool) -> dict[str, Any]:
        messages = wire_messages(request.messages)
        params: dict[str, Any] = {
            "model": self._model,
            "messages": messages,
            "temperature": request.temperature,
            "top_p": request.top_p,
            "max_tokens": request.max_tokens,
            "extra_headers": self._headers,
        }
        if request.seed is not None:
            params["seed"] = request.seed
        if request.tools:
            params["tools"] = wire_tools(request.tools)
            params["tool_choice"] = wire_tool_choice(request.tool_choice)
        schema = request.json_schema
        if schema is not None and structured:
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": schema},
            }
        elif schema is not None:
            params["response_format"] = {"type": "json_object", "schema": schema}
            # JSON mode alone does not say which JSON: the schema joins the system prompt.
            instruction = json_instruction(schema)
            if messages and messages[0]["role"] == "system":
                messages[0] = {
                    **messages[0],
                    "content": f"{messages[0]['content']}\n\n{instruction}",
                }
            else:
                messages.insert(0, {"role": "system", "content": instruction})
        return params

    # -- call ---------------------------------------------------------------------------

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        started = time.monotonic()
        # At most two adjustments (JSON mode, no streaming), each learnt once per provider.
        for _ in range(3):
            with self._lock:
                structured, stream = self._structured_outputs, self._stream
            remaining = timeout - (time.monotonic() - started)
            try:
                return self._call(request, structured, stream, remaining, started)
            except _SchemaRejected:
                with self._lock:
                    self._structured_outputs = False
            except _NoStreamUsage:
                # The streamed reply is dropped: its token counts are unknown.
                with self._lock:
                    self._stream = False
        raise ProviderError(f"{self.name}: the server keeps refusing the request's format")

    def _call(
        self,
        request: CompletionRequest,
        structured: bool,
        stream: bool,
        timeout: float,
        started: float,
    ) -> CompletionResponse:
        import openai

        if timeout <= 0:
            raise TransientProviderError(
                f"{self.name}: no time left for the request", hint="raise the case timeout"
            )
        params = self._params(request, structured)
        failure: ProviderError | None = None
        rejected = False
        # Errors are built inside `except` but raised after it, so the SDK exception (whose
        # request carries the Authorization header) is not chained onto ours.
        try:
            if stream:
                collected = self._stream_reply(params, timeout, started)
                if collected.usage is None:
                    raise _NoStreamUsage
                return self._from_stream(collected, started)
            completion = self._client.chat.completions.create(**params, timeout=timeout)
            return self._response(completion, started)
        except openai.APIStatusError as exc:
            if structured and request.json_schema is not None and rejects_json_schema(exc):
                rejected = True
            else:
                failure = self._status_failure(exc)
        except openai.APIConnectionError as exc:  # includes APITimeoutError
            failure = transport_error(self.name, exc, env=self._env, timeout=timeout)
        except (json.JSONDecodeError, openai.APIResponseValidationError) as exc:
            failure = malformed_body(self.name, exc, env=self._env)
        except openai.APIError as exc:
            # An error event in the middle of a stream: the server failed after accepting.
            failure = TransientProviderError(redact(f"{self.name}: stream error: {exc}", self._env))
        except transport_exceptions() as exc:
            failure = transport_error(self.name, exc, env=self._env, timeout=timeout)
        except openai.OpenAIError as exc:
            failure = ProviderError(redact(f"{self.name}: {exc}", self._env))
        if rejected:
            raise _SchemaRejected
        assert failure is not None
        raise failure

    def _stream_reply(self, params: dict[str, Any], timeout: float, started: float) -> _Collected:
        # The events are read here, to the end of the body, not through the SDK's Stream:
        # its sync Stream stops at `[DONE]` and closes the response unread, so HTTP/1.1 drops
        # the connection and every request opened a new one; and it built a pydantic model
        # per chunk. Both cost a large run more CPU than the rest of a case (issue 41).
        collected = _Collected()
        with self._client.chat.completions.with_streaming_response.create(
            **params,
            stream=True,
            stream_options={"include_usage": True},
            timeout=timeout,
        ) as raw:
            for data in _sse_data(raw.iter_lines()):
                # The SDK's timeout bounds each read, not the whole reply: enforce the budget.
                if time.monotonic() - started > timeout:
                    raise TransientProviderError(
                        f"{self.name}: no complete reply within {timeout:g}s",
                        hint="raise the case timeout",
                    )
                if data.startswith("[DONE]"):
                    continue  # read on to the end of the body: the connection is reused
                self._absorb(collected, json.loads(data), started)
        return collected

    def _absorb(self, collected: _Collected, chunk: Any, started: float) -> None:
        if not isinstance(chunk, dict):
            raise json.JSONDecodeError("a stream event is not a JSON object", str(chunk), 0)
        if chunk.get("error"):
            # An error event in the middle of a stream: the server failed after accepting.
            error = chunk["error"]
            message = error.get("message") if isinstance(error, dict) else None
            raise TransientProviderError(
                redact(f"{self.name}: stream error: {message or error}", self._env)
            )
        collected.model = chunk.get("model") or collected.model
        collected.fingerprint = chunk.get("system_fingerprint") or collected.fingerprint
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            collected.usage = Usage(
                input_tokens=usage.get("prompt_tokens") or 0,
                output_tokens=usage.get("completion_tokens") or 0,
            )
        for choice in (chunk.get("choices") or [])[:1]:
            delta = choice.get("delta") or {}
            content, tool_calls = delta.get("content"), delta.get("tool_calls")
            if collected.ttft_ms is None and (content or tool_calls):
                collected.ttft_ms = round((time.monotonic() - started) * 1000, 3)
            if content:
                collected.content.append(content)
            for call in tool_calls or []:
                slot = collected.calls.setdefault(
                    call.get("index", 0), {"id": "", "name": "", "args": ""}
                )
                if call.get("id"):
                    slot["id"] = call["id"]
                function = call.get("function")
                if isinstance(function, dict):
                    slot["name"] += function.get("name") or ""
                    slot["args"] += function.get("arguments") or ""
            if choice.get("finish_reason"):
                collected.finish = choice["finish_reason"]

    def _status_failure(self, exc: openai.APIStatusError) -> ProviderError:
        body = exc.body if isinstance(exc.body, dict) else {}
        error = body.get("error", body)
        kind = error.get("type") if isinstance(error, dict) else None
        detail = f"{kind}: {exc.message}" if kind else exc.message
        return status_error(
            self.name,
            exc.status_code,
            detail,
            env=self._env,
            retry_after=parse_retry_after(exc.response.headers),
            key_vars=f"{KEY_VARS} (and OPENAI_BASE_URL)",
            model_hint=MODEL_HINT,
        )

    # -- response -----------------------------------------------------------------------

    def _finish(
        self,
        *,
        text: str,
        calls: list[ToolCall],
        finish: str | None,
        usage: Usage,
        model: str,
        started: float,
        ttft_ms: float | None,
    ) -> CompletionResponse:
        stop = _STOP.get(finish or "stop", "end_turn")
        if calls and stop == "end_turn":
            stop = "tool_use"
        return CompletionResponse(
            content=text,
            tool_calls=calls,
            stop_reason=stop,
            usage=usage,
            timings=timings(started, usage.output_tokens, ttft_ms),
            model=model or self._model,
        )

    def _from_stream(self, collected: _Collected, started: float) -> CompletionResponse:
        self._saw_fingerprint(collected.fingerprint)
        calls = [
            ToolCall(
                id=slot["id"] or f"call_{index}",
                name=slot["name"],
                arguments=parse_arguments(slot["args"]),
            )
            for index, slot in sorted(collected.calls.items())
        ]
        return self._finish(
            text="".join(collected.content),
            calls=calls,
            finish=collected.finish,
            usage=collected.usage or Usage(),
            model=collected.model,
            started=started,
            ttft_ms=collected.ttft_ms,
        )

    def _response(self, completion: ChatCompletion, started: float) -> CompletionResponse:
        try:
            return self._convert(completion, started)
        except (AttributeError, TypeError, ValueError, IndexError) as exc:
            # A 200 whose JSON lacks the fields of a ChatCompletion: a gateway fault, not ours.
            failure = malformed_body(self.name, exc, env=self._env)
        raise failure

    def _convert(self, completion: ChatCompletion, started: float) -> CompletionResponse:
        choice = completion.choices[0]
        self._saw_fingerprint(completion.system_fingerprint)
        message = choice.message
        calls = [
            ToolCall(
                id=c.id or f"call_{i}",
                name=c.function.name,
                arguments=parse_arguments(c.function.arguments or ""),
            )
            for i, c in enumerate(_function_calls(message.tool_calls or []))
        ]
        u = completion.usage
        usage = (
            Usage(input_tokens=u.prompt_tokens or 0, output_tokens=u.completion_tokens or 0)
            if u is not None
            else Usage()
        )
        return self._finish(
            text=message.content or "",
            calls=calls,
            finish=choice.finish_reason,
            usage=usage,
            model=completion.model,
            started=started,
            ttft_ms=None,
        )

    def platform_info(self) -> dict[str, Any]:
        """The `system_fingerprint`s the server reported over the run (none: it sent none)."""
        with self._lock:
            return {"system_fingerprints": sorted(self._fingerprints)}

    def _saw_fingerprint(self, fingerprint: str | None) -> None:
        if fingerprint:
            with self._lock:
                self._fingerprints.add(fingerprint)

    def close(self) -> None:
        self._client.close()


def _function_calls(calls: Iterable[Any]) -> list[Any]:
    # Custom (free-text) tool calls have no `function`; evalctl declares only function tools.
    return [c for c in calls if getattr(c, "function", None) is not None]


class _SchemaRejected(Exception):
    """The server refused `response_format` type json_schema: switch to JSON mode."""


class _NoStreamUsage(Exception):
    """The stream carried no usage: ask again without streaming."""


def served_model(client: openai.OpenAI, env: Mapping[str, str], headers: Mapping[str, Any]) -> str:
    """The one model a compatible server serves (vLLM, llama.cpp), for runs without --model."""
    import openai

    failure: ProviderUnavailableError | None = None
    try:
        ids = [m.id for m in client.models.list(timeout=30, extra_headers=headers)]
    except openai.OpenAIError as exc:
        failure = ProviderUnavailableError(
            redact(f"provider 'openai': cannot list the server's models: {exc}", env),
            hint=f"pass {MODEL_HINT}",
        )
    if failure is not None:
        raise failure
    if len(ids) != 1:
        listed = ", ".join(ids[:10]) or "none"
        raise ProviderUnavailableError(
            f"provider 'openai': the server serves {len(ids)} models ({listed}); pick one",
            hint=f"pass {MODEL_HINT}",
        )
    return ids[0]


def base_url_of(env: Mapping[str, str]) -> str | None:
    return env.get("OPENAI_BASE_URL") or None


def create(options: ProviderOptions) -> OpenAIProvider:
    base_url = base_url_of(options.env)
    key = options.env.get("OPENAI_API_KEY") or None
    if base_url is None and key is None:
        raise ProviderUnavailableError(
            "provider 'openai' is not available: neither OPENAI_BASE_URL nor OPENAI_API_KEY is set",
            hint="export OPENAI_BASE_URL (a compatible server) and/or OPENAI_API_KEY",
        )
    model = options.model or options.settings.providers.openai_model
    embedding_model = options.settings.providers.openai_embedding_model
    if embedding_model is None and (base_url or DEFAULT_BASE_URL).rstrip("/") == DEFAULT_BASE_URL:
        embedding_model = DEFAULT_EMBEDDING_MODEL
    provider = OpenAIProvider(
        model=model or DEFAULT_OPENAI_MODEL,
        api_key=key,
        # Read here rather than by the SDK, so the options' env is the one source of truth.
        base_url=base_url or DEFAULT_BASE_URL,
        env=options.env,
        organization=options.env.get("OPENAI_ORG_ID") or None,
        project=options.env.get("OPENAI_PROJECT_ID") or None,
        embedding_model=embedding_model,
    )
    if model is None and base_url is not None:
        try:
            provider._model = served_model(provider._client, provider._env, provider._headers)
        except ProviderUnavailableError:
            provider.close()
            raise
    return provider
