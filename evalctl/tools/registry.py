"""Tool names as cases spell them, mapped to lazily imported implementations."""

from __future__ import annotations

import importlib

from evalctl.errors import BadInputError
from evalctl.tools.base import Tool

# name -> "module:attribute" of a Tool instance.
TOOLS: dict[str, str] = {
    "fetch_file": "evalctl.suites.release_assets.tools:FETCH_FILE",
    "inspect_archive": "evalctl.suites.release_assets.tools:INSPECT_ARCHIVE",
    "extract_pattern": "evalctl.suites.release_assets.tools:EXTRACT_PATTERN",
    "search_wines": "evalctl.suites.sommelier.tools:SEARCH_WINES",
    "semantic_search": "evalctl.suites.sommelier.tools:SEMANTIC_SEARCH",
}


def get_tool(name: str) -> Tool:
    target = TOOLS.get(name)
    if target is None:
        raise BadInputError(f"unknown tool {name!r}", field="suite.tools")
    module, attr = target.split(":")
    tool: Tool = getattr(importlib.import_module(module), attr)
    return tool


def get_tools(names: list[str]) -> dict[str, Tool]:
    return {name: get_tool(name) for name in names}
