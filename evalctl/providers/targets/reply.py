"""What every target shares: the provider traits no application has (weights, capabilities),
the input document the application gets, and the reading of its reply (text, or a
structured reply with text, tool calls and usage)."""

from __future__ import annotations

import json
import math
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalctl import userfiles
from evalctl.calllog import LoggedCall, current, record, recordable, safe_text
from evalctl.chat import CompletionRequest, CompletionResponse, Role, Timings, Usage
from evalctl.errors import ProviderError
from evalctl.providers.base import Provider


class TargetTraits(Provider):
    """An application is no model: it has no weights to hash and offers no model capability
    (grammar, tool calls) that a suite could `require`. Set up per suite, it is never
    detected, and not in `--provider all` (`real`)."""

    capabilities = frozenset()
    real = False
    application = True


def refuse_side_request(request: CompletionRequest, what: str) -> None:
    """A case's side request (a `judge` grading it, tagged `suite/id#judge`) needs a model:
    sent to the application, it would be answered as if it were a customer's question."""
    if "#" in request.tag:
        raise ProviderError(
            f"a side request ({request.tag.partition('#')[2]}) reached {what}, which is your "
            "application, not a model: name the judge's provider ([judge] provider in "
            "evalctl.toml, or the assertion's own provider; docs/targets.md)"
        )


# The sampling settings a target can pass on to the application: keys of its input document
# (and so `{{name}}` in an http body or a command's argv), keywords a python function
# declares. A target says which of them its application really receives (`sampling_params`,
# evalctl.providers.base.sent_sampling), so results never claim more.
SAMPLING_KEYS: tuple[str, ...] = ("temperature", "top_p", "seed")


def target_input(request: CompletionRequest) -> dict[str, Any]:
    """The document a target is called with: the last user message as `prompt`, the whole
    conversation (system prompt apart), the tools the suite offers, the case key, the
    case's `vars` (a data row's values; {} for a case without) and the request's sampling
    (`temperature`, `top_p`, `seed`: greedy 0, 1, 0 unless the suite, the case, the command
    line or a sampled run says otherwise)."""
    system = next((m.content for m in request.messages if m.role is Role.SYSTEM), "")
    turns = [m for m in request.messages if m.role is not Role.SYSTEM]
    prompt = next((m.content for m in reversed(turns) if m.role is Role.USER), "")
    return {
        "prompt": prompt,
        "messages": [{"role": str(m.role), "content": m.content} for m in turns],
        "system": system,
        "tools": [t.model_dump(mode="json") for t in request.tools],
        "json_schema": request.json_schema,
        "case": request.tag,
        "vars": log.vars if (log := current()) is not None else {},
        "temperature": request.temperature,
        "top_p": request.top_p,
        "seed": request.seed,
    }


def template_names(template: Any) -> set[str]:
    """The names a template's `{{name}}` placeholders use, anywhere in it."""
    if isinstance(template, dict):
        return set().union(*(template_names(v) for v in template.values()))
    if isinstance(template, list):
        return set().union(*(template_names(v) for v in template))
    if isinstance(template, str):
        return set(_PLACEHOLDER.findall(template))
    return set()


# Token counts and durations (ms) past this are no measurement (1e308, say): refused.
_MAX_COUNT = 10**12


class ReportedCall(BaseModel):
    """A tool call the application says it made."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    is_error: bool = False
    duration_ms: float = 0.0


class StructuredReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    tool_calls: list[ReportedCall] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)


def read_json(data: bytes | str, what: str) -> tuple[bool, Any]:
    """(True, the value) for a JSON body, (False, None) for one that is not JSON; JSON nested
    too deeply for the parser is a ProviderError naming `what`, never an exception that
    would end the run."""
    try:
        return True, json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False, None
    except RecursionError:
        raise ProviderError(f"{what} replied with JSON nested too deeply to read") from None
    except ValueError as exc:  # a number of more digits than Python reads
        raise ProviderError(f"{what} replied with JSON that cannot be read: {exc}") from None


def too_large(what: str, limit: int) -> ProviderError:
    return ProviderError(
        f"{what} replied with more than {limit} bytes and was stopped there "
        "(max_reply_bytes on the target; docs/targets.md)"
    )


def _parse(reply: Any, what: str) -> StructuredReply:
    if isinstance(reply, str):
        return StructuredReply(text=reply)
    try:
        return StructuredReply.model_validate(reply)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = userfiles.field_path(err["loc"]) or "reply"
        message = safe_text(userfiles.validation_message(err), 500)
        raise ProviderError(
            f"{what} returned an unusable reply: {where}: {message} (expected text, or "
            "an object with text, tool_calls and usage; docs/targets.md)"
        ) from None
    except Exception as exc:  # a value no validator can walk (nested past its limit, ...)
        raise ProviderError(
            f"{what} returned an unusable reply: {type(exc).__name__} (expected text, or an "
            "object with text, tool_calls and usage; docs/targets.md)"
        ) from None


def _bounded(parsed: StructuredReply, what: str, limit: int | None) -> None:
    """Refuse what no results file should hold: text past `limit` bytes, token counts and
    durations that are not plausible finite numbers."""
    size = len(parsed.text.encode("utf-8", errors="surrogatepass"))
    if limit is not None and size > limit:
        raise too_large(what, limit)
    for key, count in parsed.usage.model_dump().items():
        if not 0 <= count <= _MAX_COUNT:
            raise ProviderError(
                f"{what} returned an unusable reply: usage.{key} is not a token count (0 to 10^12)"
            )
    for index, call in enumerate(parsed.tool_calls):
        if not (math.isfinite(call.duration_ms) and 0 <= call.duration_ms <= _MAX_COUNT):
            raise ProviderError(
                f"{what} returned an unusable reply: tool_calls[{index + 1}].duration_ms: "
                f"{call.duration_ms:.3g} is not a duration in milliseconds"
            )


def to_response(
    reply: Any, *, what: str, model: str, elapsed_ms: float, limit: int | None = None
) -> CompletionResponse:
    """A target's reply as a final answer. Tool calls it reports are logged for the case
    (evalctl.calllog), never handed to the runner to execute: the application made them.
    What they carry is recorded as a bounded, JSON-safe copy (`recordable`); a reply whose
    text is over `limit` bytes, or whose numbers are absurd, is a ProviderError."""
    parsed = _parse(reply, what)
    _bounded(parsed, what, limit)
    for call in parsed.tool_calls:
        value = recordable(call.result)
        arguments = recordable(call.arguments)
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        record(
            LoggedCall(
                name=safe_text(call.name, 200),
                arguments=arguments if isinstance(arguments, dict) else {},
                result=text,
                value=None if call.is_error else value,
                is_error=call.is_error,
                duration_ms=call.duration_ms,
            )
        )
    return CompletionResponse(
        content=safe_text(parsed.text, len(parsed.text)),
        stop_reason="end_turn",
        usage=parsed.usage,
        timings=Timings(total_ms=round(elapsed_ms, 1)),
        model=model,
    )


_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_INDEX = re.compile(r"\[(\d+)\]")


def path_parts(path: str) -> list[str]:
    """`$.a.b[0].c` and `a.b.0.c` alike: ["a", "b", "0", "c"]; "" or "$" is the whole."""
    text = path.strip()
    text = text[1:] if text.startswith("$") else text
    text = _INDEX.sub(r".\1", text)
    return [part for part in text.split(".") if part]


def value_at(data: Any, path: str) -> tuple[bool, Any]:
    """The value at `path` in JSON data, and whether it was there."""
    for part in path_parts(path):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return False, None
    return True, data


def render_template(template: Any, values: dict[str, Any]) -> Any:
    """`template` with each `{{name}}` replaced: a string that is exactly one placeholder
    becomes the value itself (a list stays a list), one inside longer text its text."""
    if isinstance(template, dict):
        return {k: render_template(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [render_template(v, values) for v in template]
    if not isinstance(template, str):
        return template
    whole = _PLACEHOLDER.fullmatch(template)
    if whole and whole.group(1) in values:
        return values[whole.group(1)]

    def text_of(match: re.Match[str]) -> str:
        value = values.get(match.group(1))
        if value is None:
            return match.group(0)
        return value if isinstance(value, str) else json.dumps(value)

    return _PLACEHOLDER.sub(text_of, template)
