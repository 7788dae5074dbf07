"""Turn a CompletionRequest into the exact prompt text and decoding constraints.

The GGUF's own chat template renders the conversation. Templates that understand tools
get them natively (`tools`, `tool_calls`); for the others (SmolLM2's among them) the tools
are described in the system prompt and earlier calls are written back in the format the
model was asked to use, so the model sees a consistent conversation. ROLE_TOOL messages
are always rendered: dropping tool results is the classic failure of local tool stacks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from evalctl.chat import CompletionRequest, Message, Role, ToolDef
from evalctl.server import toolcalls

# Used only when a GGUF carries no chat template at all.
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# Renders OpenAI-style message dicts (and tool specs) with the model's template.
Renderer = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], str]

Mode = Literal["text", "forced_call", "json"]


class BadRequestError(ValueError):
    """The request cannot be served as asked (unknown tool, invalid schema, bad template)."""


@dataclass(frozen=True)
class Plan:
    prompt: str
    mode: Mode
    # JSON Schema that constrains decoding (as a grammar), if any.
    schema: dict[str, Any] | None
    # Tools the model may call in its reply (empty with tool_choice "none").
    tools: tuple[ToolDef, ...]
    # Strings that end generation when they appear (kept in the output).
    stop: tuple[str, ...]
    # Ids of new tool calls start here, so they stay unique and deterministic.
    first_call_id: int


class PromptBuilder:
    def __init__(self, template: str, render: Renderer):
        self._render = render
        # Crude but effective: a template that never mentions these cannot use them.
        self.native_tools = re.search(r"\btools\b", template) is not None
        self.native_calls = "tool_calls" in template

    def build(self, request: CompletionRequest) -> Plan:
        choice = request.tool_choice or "auto"
        names = {t.name for t in request.tools}
        if choice not in ("auto", "none", "required") and choice not in names:
            raise BadRequestError(f"tool_choice names {choice!r}, which is not among the tools")
        if choice == "required" and not request.tools:
            raise BadRequestError("tool_choice 'required' needs at least one tool")
        offered = tuple(request.tools) if choice != "none" else ()
        forced = [t for t in offered if t.name == choice] if choice in names else []
        if choice == "required":
            forced = list(offered)
        first_id = sum(len(m.tool_calls) for m in request.messages)

        messages = self._messages(request.messages, offered)
        tool_specs = (
            [{"type": "function", "function": toolcalls.tool_spec(t)} for t in offered]
            if offered and self.native_tools
            else None
        )
        prompt = self._render_tolerant(messages, tool_specs)

        if forced:
            if not self.native_tools:
                # Prefill the call's opening so the grammar-constrained JSON that follows is
                # exactly what the system prompt told the model to write.
                prompt += toolcalls.CALL_OPEN + "["
            return Plan(
                prompt,
                "forced_call",
                toolcalls.forced_call_schema(forced),
                tuple(forced),
                (),
                first_id,
            )
        if request.json_schema is not None:
            schema = request.json_schema
            if offered:
                schema = _union(schema, toolcalls.forced_call_schema(offered))
            return Plan(prompt, "json", schema, offered, (), first_id)
        stop = (toolcalls.CALL_CLOSE,) if offered and not self.native_tools else ()
        return Plan(prompt, "text", None, offered, stop, first_id)

    def _messages(
        self, messages: list[Message], offered: tuple[ToolDef, ...]
    ) -> list[dict[str, Any]]:
        out = [self._message(m) for m in messages]
        if offered and not self.native_tools:
            block = toolcalls.tools_prompt(offered)
            if out and out[0]["role"] == "system":
                out[0]["content"] = f"{out[0]['content']}\n\n{block}".strip()
            else:
                out.insert(0, {"role": "system", "content": block})
        return out

    def _message(self, message: Message) -> dict[str, Any]:
        if message.role is Role.ASSISTANT and message.tool_calls:
            if self.native_calls:
                return {
                    "role": "assistant",
                    "content": message.content,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        }
                        for c in message.tool_calls
                    ],
                }
            calls = toolcalls.format_calls(message.tool_calls)
            content = f"{message.content}\n{calls}" if message.content else calls
            return {"role": "assistant", "content": content}
        if message.role is Role.TOOL:
            if self.native_calls:
                return {
                    "role": "tool",
                    "content": message.content,
                    "tool_call_id": message.tool_call_id or "",
                    "name": message.name or "",
                }
            return {"role": "tool", "content": _tool_response(message)}
        return {"role": message.role.value, "content": message.content}

    def _render_tolerant(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> str:
        try:
            return self._render(messages, tools)
        except Exception as first:
            # Some templates reject roles they do not know (`raise_exception`); a tool
            # result then travels as a user turn rather than being lost.
            if not any(m["role"] == "tool" for m in messages):
                raise BadRequestError(f"the model's chat template failed: {first}") from None
            demoted = [{**m, "role": "user"} if m["role"] == "tool" else m for m in messages]
            try:
                return self._render(demoted, tools)
            except Exception as exc:
                raise BadRequestError(f"the model's chat template failed: {exc}") from None


def _tool_response(message: Message) -> str:
    status = "\nstatus: error" if message.is_error else ""
    return (
        f"<tool_response>\nname: {message.name or ''}{status}\n{message.content}\n</tool_response>"
    )


def _union(answer: dict[str, Any], call: dict[str, Any]) -> dict[str, Any]:
    """Either the answer schema or a tool call; `$defs` move to the top so `$ref`s resolve."""
    answer = dict(answer)
    defs: dict[str, Any] = {k: answer.pop(k) for k in ("$defs", "definitions") if k in answer}
    calls = call.get("anyOf", [call])
    return {"anyOf": [answer, *calls], **defs}


def call_from_json(text: str, tools: tuple[ToolDef, ...]) -> tuple[str, dict[str, Any]] | None:
    """A bare `{"name": ..., "arguments": {...}}` naming one of `tools`, else None."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, dict) or set(value) != {"name", "arguments"}:
        return None
    name, args = value["name"], value["arguments"]
    if name not in {t.name for t in tools} or not isinstance(args, dict):
        return None
    return name, args
