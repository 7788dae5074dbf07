"""What every declared tool backend shares: its definition from the declaration, and a
returned value turned into the tool's output (JSON for the model, the value for the spy)."""

from __future__ import annotations

from typing import Any

from evalctl.cases.tooldecl import ToolDecl
from evalctl.chat import ToolDef
from evalctl.tools.base import ToolFailedError, ToolOutput, to_json


def output_of(value: Any) -> ToolOutput:
    try:
        content = to_json(value)
    except (TypeError, ValueError) as exc:
        raise ToolFailedError(f"the tool returned a value that is not JSON: {exc}") from None
    return ToolOutput(content=content, data={"value": value})


def definition_of(decl: ToolDecl) -> ToolDef:
    return ToolDef(name=decl.name, description=decl.description, parameters=decl.parameters)
