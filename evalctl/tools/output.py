"""What every declared tool backend shares: its definition from the declaration, and a
returned value turned into the tool's output (JSON for the model, the value for the spy),
within the output cap and the nesting results files allow."""

from __future__ import annotations

from typing import Any

from evalctl.cases.tooldecl import ToolDecl
from evalctl.chat import ToolDef
from evalctl.config import Settings
from evalctl.tools.base import ToolFailedError, ToolOutput, to_json
from evalctl.userfiles import MAX_NESTING

# A tool's value is stored inside a case's record (case, attempt, tool call, data, value):
# this much nesting of its own keeps the results file readable (userfiles.MAX_NESTING).
MAX_VALUE_NESTING = MAX_NESTING - 20


def output_limit(decl: ToolDecl, settings: Settings) -> int:
    """The most a tool may return, in bytes: its `max_output_bytes`, else the setting."""
    return decl.max_output_bytes or settings.tool_output_limit


def too_large(limit: int) -> str:
    """The tool error for output past the cap."""
    size = f"{limit // 1_000_000} MB" if limit % 1_000_000 == 0 else f"{limit} bytes"
    return (
        f"output truncated: the tool returned more than {size} "
        "(max_output_bytes on the tool, tool_output_limit in evalctl.toml); it was stopped "
        "and its output dropped"
    )


def output_of(value: Any, limit: int | None = None) -> ToolOutput:
    """The output for a returned value; a tool error if it is not JSON, nested past
    MAX_VALUE_NESTING, or (with `limit`) longer than `limit` bytes as JSON."""
    depth = _nesting(value, MAX_VALUE_NESTING)
    if depth > MAX_VALUE_NESTING:
        raise ToolFailedError(
            f"the tool returned a value nested more than {MAX_VALUE_NESTING} levels deep"
        )
    try:
        content = to_json(value)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ToolFailedError(f"the tool returned a value that is not JSON: {exc}") from None
    if limit is not None and len(content.encode("utf-8", errors="replace")) > limit:
        raise ToolFailedError(too_large(limit))
    return ToolOutput(content=content, data={"value": value})


def _nesting(value: Any, limit: int) -> int:
    # Iterative, and stops one level past the limit: a value nested 100000 deep is measured
    # without recursion and without walking all of it.
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            depth += 1
            deepest = max(deepest, depth)
            if deepest > limit:
                return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth) for child in children)
    return deepest


def definition_of(decl: ToolDecl) -> ToolDef:
    return ToolDef(name=decl.name, description=decl.description, parameters=decl.parameters)
