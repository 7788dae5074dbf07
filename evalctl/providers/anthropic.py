"""The Anthropic Messages API through the official `anthropic` SDK (2.x, API 2026-10-21).

Mapping from evalctl's chat types:

* `system` messages are joined into the top-level `system` prompt;
* assistant messages become `text` + `tool_use` blocks; `tool` messages become `tool_result`
  blocks (`is_error` kept), and consecutive results share one user message, as the API
  requires; a user message right after tool results joins that same message;
* `tool_choice`: auto -> auto, none -> none, required -> any, a tool name -> that tool;
* `json_schema` uses the API's structured outputs (`output_config.format`, type
  `json_schema`), after the SDK's `transform_schema` makes it strict-compatible. Chosen over
  an instruction in the system prompt (not enforced) and over a forced tool (it would clash
  with a case's own tools and `tool_choice`, and move the answer out of the reply text); the
  scorer still validates the reply against the case's original schema;
* `temperature`, `top_p` and `seed` are not sent: API version 2026-10-21 rejects sampling
  parameters (the SDK dropped them) and Anthropic has no seed, so runs are not
  bit-reproducible — measure flakiness with repeats. `sampling_params` is empty, so the
  results record none of them as sent;
* stop reasons: end_turn, stop_sequence, refusal, pause_turn -> end_turn; tool_use ->
  tool_use; max_tokens, model_context_window_exceeded -> max_tokens.

The client is built with `max_retries=0`: the shared `evalctl.retry.RetryPolicy` is the only
retry layer. Errors are classified in `evalctl.providers.cloud`. The key and base URL come from
the provider options' env (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL) and are passed explicitly.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
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
from evalctl.errors import ProviderError, ProviderUnavailableError
from evalctl.providers.base import CHAT, Provider, missing_package
from evalctl.providers.cloud import (
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
    import anthropic
    from anthropic.types import Message as AnthropicMessage

DEFAULT_BASE_URL = "https://api.anthropic.com"

_STOP: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "refusal": "end_turn",
    "pause_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
}


def wire_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """(system prompt, Messages API `messages`) for a provider-neutral conversation."""
    system: list[str] = []
    wire: list[dict[str, Any]] = []

    def open_user_blocks() -> list[dict[str, Any]] | None:
        # The content list of a trailing user message, if it holds blocks we may extend.
        if wire and wire[-1]["role"] == "user" and isinstance(wire[-1]["content"], list):
            blocks: list[dict[str, Any]] = wire[-1]["content"]
            return blocks
        return None

    for msg in messages:
        if msg.role is Role.SYSTEM:
            if msg.content:
                system.append(msg.content)
        elif msg.role is Role.ASSISTANT:
            blocks: list[dict[str, Any]] = []
            if msg.content:
                blocks.append({"type": "text", "text": msg.content})
            blocks.extend(
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in msg.tool_calls
            )
            if blocks:  # the API rejects an empty assistant turn
                wire.append({"role": "assistant", "content": blocks})
        elif msg.role is Role.TOOL:
            result: dict[str, Any] = {"type": "tool_result", "tool_use_id": msg.tool_call_id or ""}
            if msg.content:
                result["content"] = msg.content
            if msg.is_error:
                result["is_error"] = True
            pending = open_user_blocks()
            if pending is not None:
                pending.append(result)
            else:
                wire.append({"role": "user", "content": [result]})
        else:
            pending = open_user_blocks()
            if pending is not None:
                pending.append({"type": "text", "text": msg.content})
            else:
                wire.append({"role": "user", "content": msg.content})
    return "\n\n".join(system), wire


def wire_tools(tools: Sequence[ToolDef]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]


def wire_tool_choice(choice: str) -> dict[str, Any]:
    if choice in ("auto", "none"):
        return {"type": choice}
    if choice == "required":
        return {"type": "any"}
    return {"type": "tool", "name": choice}


class AnthropicProvider(Provider):
    name = "anthropic"
    summary = "Anthropic Messages API via the official SDK"
    capabilities = CHAT
    concurrent = True
    billed = True
    detect_env = ("ANTHROPIC_API_KEY",)
    # Nothing of a request's sampling is sent (see the module docstring).
    sampling_params: frozenset[str] = frozenset()

    def __init__(self, *, model: str, api_key: str, base_url: str, env: Mapping[str, str]):
        import anthropic

        self._model = model
        self._env = redaction_env(env)
        self._client: anthropic.Anthropic = anthropic.Anthropic(
            api_key=api_key, base_url=base_url, max_retries=0
        )

    @property
    def model(self) -> str:
        return self._model

    @classmethod
    def unavailable_reason(cls, options: ProviderOptions) -> str | None:
        if not options.env.get("ANTHROPIC_API_KEY"):
            return "ANTHROPIC_API_KEY is not set"
        return missing_package("anthropic", "pip install anthropic")

    def _params(self, request: CompletionRequest) -> dict[str, Any]:
        import anthropic

        system, messages = wire_messages(request.messages)
        params: dict[str, Any] = {
            "model": self._model,
            "max_tokens": request.max_tokens,
            "messages": messages,
        }
        if system:
            params["system"] = system
        if request.tools:
            params["tools"] = wire_tools(request.tools)
            params["tool_choice"] = wire_tool_choice(request.tool_choice)
        if request.json_schema is not None:
            try:
                schema = anthropic.transform_schema(request.json_schema)
            except (ValueError, TypeError) as exc:
                raise ProviderError(
                    f"anthropic: the case's JSON schema cannot be used for structured output: {exc}"
                ) from None
            params["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
        return params

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        import anthropic

        params = self._params(request)
        started = time.monotonic()
        failure: ProviderError | None = None
        # Errors are built inside `except` but raised after it, so the SDK exception (whose
        # request carries the Authorization header) is not chained onto ours.
        try:
            message = self._client.messages.create(**params, timeout=timeout)
        except anthropic.APIStatusError as exc:
            failure = self._status_failure(exc)
        except anthropic.APIConnectionError as exc:  # includes APITimeoutError
            failure = transport_error(self.name, exc, env=self._env, timeout=timeout)
        except (json.JSONDecodeError, anthropic.APIResponseValidationError) as exc:
            failure = malformed_body(self.name, exc, env=self._env)
        except transport_exceptions() as exc:
            failure = transport_error(self.name, exc, env=self._env, timeout=timeout)
        except anthropic.AnthropicError as exc:
            failure = ProviderError(redact(f"anthropic: {exc}", self._env))
        if failure is not None:
            raise failure
        return self._response(message, started)

    def _status_failure(self, exc: anthropic.APIStatusError) -> ProviderError:
        kind = f"{exc.type}: " if exc.type else ""
        detail = f"{kind}{exc.api_message or exc.message}"
        return status_error(
            self.name,
            exc.status_code,
            detail,
            env=self._env,
            retry_after=parse_retry_after(exc.response.headers),
            key_vars="ANTHROPIC_API_KEY",
            model_hint="--model, or [providers] anthropic_model in evalctl.toml",
        )

    def _response(self, message: AnthropicMessage, started: float) -> CompletionResponse:
        try:
            return self._convert(message, started)
        except (AttributeError, TypeError, ValueError) as exc:
            # A 200 whose JSON lacks the fields of a Message: a gateway fault, not ours.
            failure = malformed_body(self.name, exc, env=self._env)
        raise failure

    def _convert(self, message: AnthropicMessage, started: float) -> CompletionResponse:
        from anthropic.types import TextBlock, ToolUseBlock

        text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
        calls = [
            ToolCall(id=b.id, name=b.name, arguments=dict(b.input))
            for b in message.content
            if isinstance(b, ToolUseBlock)
        ]
        u = message.usage
        usage = Usage(
            input_tokens=u.input_tokens
            + (u.cache_creation_input_tokens or 0)
            + (u.cache_read_input_tokens or 0),
            output_tokens=u.output_tokens,
        )
        stop = _STOP.get(message.stop_reason or "end_turn", "end_turn")
        if calls and stop == "end_turn":
            stop = "tool_use"
        return CompletionResponse(
            content=text,
            tool_calls=calls,
            stop_reason=stop,
            usage=usage,
            timings=timings(started, usage.output_tokens),
            model=str(message.model or self._model),
        )

    def close(self) -> None:
        self._client.close()


def create(options: ProviderOptions) -> AnthropicProvider:
    key = options.env.get("ANTHROPIC_API_KEY")
    if not key:
        raise ProviderUnavailableError(
            "provider 'anthropic' is not available: ANTHROPIC_API_KEY is not set",
            hint="export ANTHROPIC_API_KEY, or pick another provider with --provider",
        )
    return AnthropicProvider(
        model=options.model or options.settings.providers.anthropic_model,
        api_key=key,
        # Read here rather than by the SDK, so the options' env is the one source of truth.
        base_url=options.env.get("ANTHROPIC_BASE_URL") or DEFAULT_BASE_URL,
        env=options.env,
    )
