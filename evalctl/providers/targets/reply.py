"""What every target shares: the provider traits no application has (weights, capabilities),
the input document the application gets, and the reading of its reply (text, or a
structured reply with text, tool calls and usage)."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalctl.calllog import LoggedCall, current, record
from evalctl.chat import CompletionRequest, CompletionResponse, Role, Timings, Usage
from evalctl.errors import ProviderError


class TargetTraits:
    """An application is no model: it has no weights to hash and offers no model capability
    (grammar, tool calls) that a suite could `require`."""

    @property
    def model_sha256(self) -> str | None:
        return None

    @property
    def capabilities(self) -> frozenset[str]:
        return frozenset()


def refuse_side_request(request: CompletionRequest, what: str) -> None:
    """A case's side request (a `judge` grading it, tagged `suite/id#judge`) needs a model:
    sent to the application, it would be answered as if it were a customer's question."""
    if "#" in request.tag:
        raise ProviderError(
            f"a side request ({request.tag.partition('#')[2]}) reached {what}, which is your "
            "application, not a model: name the judge's provider ([judge] provider in "
            "evalctl.toml, or the assertion's own provider; docs/targets.md)"
        )


def target_input(request: CompletionRequest) -> dict[str, Any]:
    """The document a target is called with: the last user message as `prompt`, the whole
    conversation (system prompt apart), the tools the suite offers, the case key and the
    case's `vars` (a data row's values; {} for a case without)."""
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
    }


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


def to_response(reply: Any, *, what: str, model: str, elapsed_ms: float) -> CompletionResponse:
    """A target's reply as a final answer. Tool calls it reports are logged for the case
    (evalctl.calllog), never handed to the runner to execute: the application made them."""
    if isinstance(reply, str):
        parsed = StructuredReply(text=reply)
    else:
        try:
            parsed = StructuredReply.model_validate(reply)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "reply"
            raise ProviderError(
                f"{what} returned an unusable reply: {where}: {err['msg']} (expected text, or "
                "an object with text, tool_calls and usage; docs/targets.md)"
            ) from None
    for call in parsed.tool_calls:
        text = call.result if isinstance(call.result, str) else json.dumps(call.result)
        record(
            LoggedCall(
                name=call.name,
                arguments=call.arguments,
                result=text,
                value=None if call.is_error else call.result,
                is_error=call.is_error,
                duration_ms=call.duration_ms,
            )
        )
    return CompletionResponse(
        content=parsed.text,
        stop_reason="end_turn",
        usage=parsed.usage,
        timings=Timings(total_ms=round(elapsed_ms, 1)),
        model=model,
    )


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
    whole = re.fullmatch(r"\{\{\s*(\w+)\s*\}\}", template)
    if whole and whole.group(1) in values:
        return values[whole.group(1)]

    def text_of(match: re.Match[str]) -> str:
        value = values.get(match.group(1))
        if value is None:
            return match.group(0)
        return value if isinstance(value, str) else json.dumps(value)

    return re.sub(r"\{\{\s*(\w+)\s*\}\}", text_of, template)
