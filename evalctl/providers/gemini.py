"""Google Gemini through the `google-genai` SDK (Gemini Developer API, generateContent).

Mapping from evalctl's chat types:

* `system` messages -> `system_instruction`;
* assistant messages -> a `model` turn of text + `function_call` parts; `tool` messages ->
  `function_response` parts (`{"output": ...}`, or `{"error": ...}` when `is_error`), and
  consecutive results share one `user` turn;
* function-call ids: the API leaves them out for most models, so the provider makes one up
  (prefix `gemini-local-`) for the runner to key results on, and strips it again when the call
  goes back; real ids round-trip unchanged;
* thought signatures: thinking models sign function-call parts and require the signature back
  on the next turn. The chat types have no field for it, so the provider remembers it by call
  id (a bounded cache; one provider instance serves a whole run);
* `tool_choice`: auto -> AUTO, none -> NONE, required -> ANY, a tool name -> ANY restricted to
  that function;
* `json_schema`: without tools, `response_mime_type=application/json` + `response_json_schema`
  (constrained decoding). With tools, Gemini 2.x refuses a JSON mime type next to function
  calling, so the schema goes into the system instruction instead (not enforced; the scorer
  validates);
* `temperature`, `top_p`, `max_tokens` (`max_output_tokens`) and `seed` are sent as given;
* finish reasons: MAX_TOKENS -> max_tokens; anything else -> end_turn (tool_use when the reply
  holds function calls). A prompt blocked outright (no candidate) is a permanent error.
* usage: input = prompt tokens; output = candidate + thinking tokens (both billed as output).

Embeddings (`embed()`): `client.models.embed_content`, which google-genai sends as
`models/{model}:batchEmbedContents`, at most 100 texts a request (the API's limit); the model
is `[providers] gemini_embedding_model` (default gemini-embedding-001), no task type or
output dimensionality is set, and vectors are returned as the API sends them. The Gemini API
reports no token count for embeddings, so `input_tokens` is None.

The SDK's own retries are off (`HttpRetryOptions(attempts=1)`): the shared RetryPolicy is the
only retry layer. Key: GOOGLE_API_KEY, else GEMINI_API_KEY. Base URL:
`settings.providers.gemini_base_url` (env EVALCTL_GEMINI_BASE_URL), passed via `http_options`.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from evalctl.chat import (
    CompletionRequest,
    CompletionResponse,
    Message,
    Role,
    StopReason,
    ToolCall,
    Usage,
)
from evalctl.embeddings import Embeddings
from evalctl.errors import ProviderError, ProviderUnavailableError
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

if TYPE_CHECKING:
    from google.genai import errors as genai_errors
    from google.genai import types

SYNTHETIC_ID_PREFIX = "gemini-local-"
_SIGNATURE_CACHE_SIZE = 4096
# The most texts one batchEmbedContents request may carry.
EMBED_BATCH = 100
MODEL_HINT = "--model, or [providers] gemini_model in evalctl.toml"
_T = TypeVar("_T")


def json_instruction(schema: dict[str, Any]) -> str:
    return (
        "When you give your final answer, reply with only a JSON document (no prose, no code "
        f"fence) that matches this JSON Schema:\n{json.dumps(schema, sort_keys=True)}"
    )


def retry_after_of(exc: genai_errors.APIError) -> float | None:
    """A Retry-After header if any, else the `retryDelay` of a google.rpc.RetryInfo detail."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    from_header = parse_retry_after(dict(headers)) if headers is not None else None
    if from_header is not None:
        return from_header
    details = exc.details.get("error", exc.details) if isinstance(exc.details, dict) else {}
    for item in details.get("details", []) if isinstance(details, dict) else []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("RetryInfo"):
            delay = str(item.get("retryDelay", "")).removesuffix("s")
            try:
                return max(0.0, float(delay))
            except ValueError:
                return None
    return None


def gemini_key(env: Mapping[str, str]) -> str | None:
    return env.get("GOOGLE_API_KEY") or env.get("GEMINI_API_KEY") or None


class GeminiProvider(Provider):
    name = "gemini"
    summary = "Google Gemini via the google-genai SDK"
    capabilities = CHAT_AND_EMBEDDINGS
    concurrent = True
    billed = True
    detect_env = ("GOOGLE_API_KEY", "GEMINI_API_KEY")

    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        base_url: str | None,
        env: Mapping[str, str],
        embedding_model: str = "gemini-embedding-001",
    ):
        from google import genai
        from google.genai import types

        self._model = model
        self.embedding_model = embedding_model
        self._env = redaction_env(env)
        http_options = types.HttpOptions(
            base_url=base_url, retry_options=types.HttpRetryOptions(attempts=1)
        )
        # vertexai=False: GOOGLE_GENAI_USE_VERTEXAI in the environment must not switch backends.
        self._client = genai.Client(api_key=api_key, vertexai=False, http_options=http_options)
        self._signatures: OrderedDict[str, bytes] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return self._model

    @classmethod
    def unavailable_reason(cls, options: ProviderOptions) -> str | None:
        if not gemini_key(options.env):
            return "neither GOOGLE_API_KEY nor GEMINI_API_KEY is set"
        return missing_package("google.genai", "pip install google-genai")

    # -- request ------------------------------------------------------------------------

    def _remember(self, call_id: str, signature: bytes) -> None:
        with self._lock:
            self._signatures[call_id] = signature
            while len(self._signatures) > _SIGNATURE_CACHE_SIZE:
                self._signatures.popitem(last=False)

    def _signature(self, call_id: str) -> bytes | None:
        with self._lock:
            return self._signatures.get(call_id)

    def wire_contents(self, messages: Sequence[Message]) -> tuple[str, list[types.Content]]:
        from google.genai import types

        system: list[str] = []
        contents: list[types.Content] = []
        call_names: dict[str, str] = {}

        def real_id(call_id: str | None) -> str | None:
            if not call_id or call_id.startswith(SYNTHETIC_ID_PREFIX):
                return None
            return call_id

        def add_user_part(part: types.Part) -> None:
            # Tool results (and a user message right after them) share one user turn.
            last = contents[-1] if contents else None
            if last is not None and last.role == "user" and last.parts is not None:
                last.parts.append(part)
            else:
                contents.append(types.Content(role="user", parts=[part]))

        for msg in messages:
            if msg.role is Role.SYSTEM:
                if msg.content:
                    system.append(msg.content)
            elif msg.role is Role.ASSISTANT:
                parts: list[types.Part] = []
                if msg.content:
                    parts.append(types.Part(text=msg.content))
                for call in msg.tool_calls:
                    call_names[call.id] = call.name
                    parts.append(
                        types.Part(
                            function_call=types.FunctionCall(
                                id=real_id(call.id), name=call.name, args=call.arguments
                            ),
                            thought_signature=self._signature(call.id),
                        )
                    )
                if parts:
                    contents.append(types.Content(role="model", parts=parts))
            elif msg.role is Role.TOOL:
                call_id = msg.tool_call_id or ""
                payload = {"error": msg.content} if msg.is_error else {"output": msg.content}
                response = types.FunctionResponse(
                    id=real_id(call_id),
                    name=msg.name or call_names.get(call_id, ""),
                    response=payload,
                )
                add_user_part(types.Part(function_response=response))
            else:
                add_user_part(types.Part(text=msg.content))
        return "\n\n".join(system), contents

    def _config(
        self, request: CompletionRequest, system: str, timeout: float
    ) -> types.GenerateContentConfig:
        from google.genai import types

        tools: list[types.Tool] | None = None
        tool_config: types.ToolConfig | None = None
        if request.tools:
            declarations = [
                types.FunctionDeclaration(
                    name=t.name, description=t.description, parameters_json_schema=t.parameters
                )
                for t in request.tools
            ]
            tools = [types.Tool(function_declarations=declarations)]
            choice = request.tool_choice
            mode = {"auto": "AUTO", "none": "NONE", "required": "ANY"}.get(choice, "ANY")
            allowed = None if choice in ("auto", "none", "required") else [choice]
            tool_config = types.ToolConfig(
                function_calling_config=types.FunctionCallingConfig(
                    mode=types.FunctionCallingConfigMode(mode), allowed_function_names=allowed
                )
            )
        mime_type: str | None = None
        response_schema: dict[str, Any] | None = None
        if request.json_schema is not None:
            if request.tools:
                system = "\n\n".join(
                    s for s in (system, json_instruction(request.json_schema)) if s
                )
            else:
                mime_type, response_schema = "application/json", request.json_schema
        return types.GenerateContentConfig(
            system_instruction=system or None,
            temperature=request.temperature,
            top_p=request.top_p,
            max_output_tokens=request.max_tokens,
            seed=request.seed,
            tools=tools,
            tool_config=tool_config,
            response_mime_type=mime_type,
            response_json_schema=response_schema,
            # HttpOptions.timeout is in milliseconds.
            http_options=types.HttpOptions(timeout=max(1, round(timeout * 1000))),
        )

    # -- call ---------------------------------------------------------------------------

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        system, contents = self.wire_contents(request.messages)
        config = self._config(request, system, timeout)
        started = time.monotonic()
        reply = self._guarded(
            lambda: self._client.models.generate_content(
                model=self._model, contents=contents, config=config
            ),
            timeout,
            MODEL_HINT,
        )
        return self._response(reply, started)

    def embed(self, texts: Sequence[str], *, timeout: float) -> Embeddings:
        """One vector per text, in order, from `embed_content`."""
        vectors: list[list[float]] = []
        for batch, remaining in embedding_batches(self.name, texts, EMBED_BATCH, timeout):
            reply = self._embed_batch(batch, remaining)
            got = [list(e.values or []) for e in reply.embeddings or []]
            # An empty vector is a missing one.
            check_vector_count(self.name, len(batch), sum(1 for v in got if v))
            vectors.extend(got)
        return Embeddings(vectors, self.embedding_model, None, None)

    def _embed_batch(self, batch: list[str], timeout: float) -> types.EmbedContentResponse:
        from google.genai import types

        # HttpOptions.timeout is in milliseconds.
        config = types.EmbedContentConfig(
            http_options=types.HttpOptions(timeout=max(1, round(timeout * 1000)))
        )
        return self._guarded(
            lambda: self._client.models.embed_content(
                model=self.embedding_model, contents=batch, config=config
            ),
            timeout,
            "[providers] gemini_embedding_model in evalctl.toml",
        )

    def _guarded(self, call: Callable[[], _T], timeout: float, model_hint: str) -> _T:
        """`call()`, its SDK failures mapped onto the three failure classes."""
        from google.genai import errors as genai_errors

        failure: ProviderError | None = None
        # Built inside `except`, raised after it: the SDK exception (its request carries the
        # x-goog-api-key header) is not chained onto ours.
        try:
            return call()
        except genai_errors.APIError as exc:
            failure = status_error(
                self.name,
                int(exc.code or 0),
                f"{exc.status}: {exc.message}",
                env=self._env,
                retry_after=retry_after_of(exc),
                key_vars="GOOGLE_API_KEY / GEMINI_API_KEY",
                model_hint=model_hint,
            )
        except (json.JSONDecodeError, genai_errors.UnknownApiResponseError) as exc:
            failure = malformed_body(self.name, exc, env=self._env)
        except transport_exceptions() as exc:
            failure = transport_error(self.name, exc, env=self._env, timeout=timeout)
        assert failure is not None
        raise failure

    # -- response -----------------------------------------------------------------------

    def _response(self, reply: types.GenerateContentResponse, started: float) -> CompletionResponse:
        try:
            return self._convert(reply, started)
        except (AttributeError, TypeError, ValueError) as exc:
            failure = malformed_body(self.name, exc, env=self._env)
        raise failure

    def _convert(self, reply: types.GenerateContentResponse, started: float) -> CompletionResponse:
        usage = self._usage(reply)
        if not reply.candidates:
            feedback = reply.prompt_feedback
            reason = feedback.block_reason if feedback is not None else None
            raise ProviderError(
                f"gemini: no candidate returned (prompt blocked: {reason or 'unknown reason'})",
                hint="the prompt tripped Gemini's safety filters",
            )
        candidate = reply.candidates[0]
        parts = candidate.content.parts if candidate.content and candidate.content.parts else []
        texts: list[str] = []
        calls: list[ToolCall] = []
        for part in parts:
            if part.function_call is not None:
                fc = part.function_call
                call_id = fc.id or f"{SYNTHETIC_ID_PREFIX}{uuid.uuid4().hex[:16]}"
                if part.thought_signature:
                    self._remember(call_id, part.thought_signature)
                calls.append(ToolCall(id=call_id, name=fc.name or "", arguments=fc.args or {}))
            elif part.text and not part.thought:
                texts.append(part.text)
        finish = candidate.finish_reason
        stop: StopReason = "end_turn"
        if finish is not None and finish.value == "MAX_TOKENS":
            stop = "max_tokens"
        elif calls:
            stop = "tool_use"
        return CompletionResponse(
            content="".join(texts),
            tool_calls=calls,
            stop_reason=stop,
            usage=usage,
            timings=timings(started, usage.output_tokens),
            model=reply.model_version or self._model,
        )

    @staticmethod
    def _usage(reply: types.GenerateContentResponse) -> Usage:
        meta = reply.usage_metadata
        if meta is None:
            return Usage()
        return Usage(
            input_tokens=meta.prompt_token_count or 0,
            output_tokens=(meta.candidates_token_count or 0) + (meta.thoughts_token_count or 0),
        )

    def close(self) -> None:
        self._client.close()


def create(options: ProviderOptions) -> GeminiProvider:
    key = gemini_key(options.env)
    if not key:
        raise ProviderUnavailableError(
            "provider 'gemini' is not available: neither GOOGLE_API_KEY nor GEMINI_API_KEY is set",
            hint="export GOOGLE_API_KEY (or GEMINI_API_KEY), or pick another provider",
        )
    return GeminiProvider(
        model=options.model or options.settings.providers.gemini_model,
        api_key=key,
        # The env wins over evalctl.toml, as in load_settings.
        base_url=options.env.get("EVALCTL_GEMINI_BASE_URL")
        or options.settings.providers.gemini_base_url,
        env=options.env,
        embedding_model=options.settings.providers.gemini_embedding_model,
    )
