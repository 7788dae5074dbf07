"""Tool calling for models whose chat template knows nothing about tools.

Three jobs: describe the tools in the system prompt (in the `<tools>` / `<tool_call>` format
SmolLM2 and most small instruct models were tuned on), write earlier tool calls back into
assistant turns in that same format, and find tool calls in free text. The parser is
tolerant on purpose: llama-cpp-python only returns structured calls for a *forced*
tool_choice, and a 135M model wraps, quotes and names things inconsistently.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

from evalctl.chat import ToolCall, ToolDef

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"

_TAGGED = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_FENCE = re.compile(r"```(?:json|python|tool_call)?\s*(.*?)```", re.DOTALL)
_NAME_KEYS = ("name", "function", "tool", "tool_name")
_ARG_KEYS = ("arguments", "parameters", "args", "params", "input")


def tool_spec(tool: ToolDef) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}


def tools_prompt(tools: Sequence[ToolDef]) -> str:
    """The block appended to the system prompt when the template cannot present tools."""
    listing = json.dumps([tool_spec(t) for t in tools], ensure_ascii=False)
    return (
        "You have access to the following tools:\n"
        f"<tools>{listing}</tools>\n\n"
        "To call tools, reply with only this, and no other text:\n"
        f'{CALL_OPEN}[{{"name": "tool_name", "arguments": {{"arg": "value"}}}}]{CALL_CLOSE}\n'
        "When a tool result answers the request, reply to the user in plain text."
    )


def format_calls(calls: Sequence[ToolCall]) -> str:
    """An assistant turn's tool calls, written the way the model was asked to write them."""
    body = json.dumps(
        [{"name": c.name, "arguments": c.arguments} for c in calls], ensure_ascii=False
    )
    return f"{CALL_OPEN}{body}{CALL_CLOSE}"


def forced_call_schema(tools: Sequence[ToolDef]) -> dict[str, Any]:
    """JSON Schema of one call to any of `tools`: used as a grammar for forced tool_choice."""
    branches = [
        {
            "type": "object",
            "properties": {"name": {"const": t.name}, "arguments": t.parameters},
            "required": ["name", "arguments"],
        }
        for t in tools
    ]
    return branches[0] if len(branches) == 1 else {"anyOf": branches}


def parse_tool_calls(
    text: str, tools: Sequence[ToolDef], *, first_id: int = 0
) -> tuple[str, list[ToolCall]]:
    """Split model output into (remaining text, tool calls).

    Calls inside `<tool_call>` tags are accepted whatever their name (a wrong name is the
    model's mistake, to be scored, not hidden); untagged JSON or `name(arg=...)` forms
    only when they name one of `tools`, so an ordinary JSON answer is not mistaken for a
    call.
    """
    known = {t.name for t in tools}
    found: list[tuple[str, dict[str, Any]]] = []
    remaining = text
    tagged = list(_TAGGED.finditer(text))
    if tagged:
        for match in tagged:
            found.extend(_calls_in(match.group(1), known=None))
        remaining = _TAGGED.sub("", text)
    else:
        for candidate in _untagged_candidates(text):
            calls = _calls_in(candidate, known=known)
            if calls:
                found.extend(calls)
                remaining = text.replace(candidate, "")
                break
    result = [
        ToolCall(id=f"call_{first_id + i}", name=name, arguments=args)
        for i, (name, args) in enumerate(found)
    ]
    if result:
        remaining = remaining.replace("```json", "").replace("```", "")
    return remaining.strip(), result


def _untagged_candidates(text: str) -> Iterator[str]:
    for match in _FENCE.finditer(text):
        yield match.group(1)
    yield text


def _calls_in(fragment: str, *, known: set[str] | None) -> list[tuple[str, dict[str, Any]]]:
    fragment = _FENCE.sub(lambda m: m.group(1), fragment).strip()
    values = list(_json_values(fragment))
    calls: list[tuple[str, dict[str, Any]]] = []
    for value in values:
        items = value if isinstance(value, list) else [value]
        calls.extend(c for c in (_as_call(item, known) for item in items) if c is not None)
    if not calls:
        calls = _python_calls(fragment, known)
    return calls


def _json_values(fragment: str) -> Iterator[Any]:
    """Every top-level JSON object or array embedded in `fragment`, left to right."""
    decoder = json.JSONDecoder()
    pos = 0
    while True:
        starts = [i for i in (fragment.find("{", pos), fragment.find("[", pos)) if i >= 0]
        if not starts:
            return
        start = min(starts)
        try:
            value, end = decoder.raw_decode(fragment, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        yield value
        pos = end


def _as_call(item: Any, known: set[str] | None) -> tuple[str, dict[str, Any]] | None:
    if not isinstance(item, dict):
        return None
    # OpenAI-style {"type": "function", "function": {"name": ..., "arguments": ...}}.
    if isinstance(item.get("function"), dict):
        item = item["function"]
    name = next((item[k] for k in _NAME_KEYS if isinstance(item.get(k), str)), None)
    if name is None or (known is not None and name not in known):
        return None
    raw_args = next((item[k] for k in _ARG_KEYS if k in item), None)
    if raw_args is None:
        # {"name": "x", "a": 1}: the remaining keys are the arguments.
        raw_args = {k: v for k, v in item.items() if k not in _NAME_KEYS and k != "type"}
    if isinstance(raw_args, str):
        try:
            raw_args = json.loads(raw_args) if raw_args.strip() else {}
        except json.JSONDecodeError:
            return None
    if not isinstance(raw_args, dict):
        return None
    return name, raw_args


def _python_calls(fragment: str, known: set[str] | None) -> list[tuple[str, dict[str, Any]]]:
    """`name(a="x", b=2)` or `[name(a="x")]`, a format many small models were tuned on."""
    text = fragment.strip()
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return []
    nodes = tree.body.elts if isinstance(tree.body, ast.List | ast.Tuple) else [tree.body]
    calls = []
    for node in nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)) or node.args:
            return []
        if known is not None and node.func.id not in known:
            return []
        try:
            args = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
        except ValueError:
            return []
        calls.append((node.func.id, args))
    return calls
