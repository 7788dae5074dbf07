"""The tools one suite offers: its own `[[suite.tool]]` declarations, then built-in and
plugin tools by name, in `[suite] tools` order."""

from __future__ import annotations

from evalctl.cases.schema import Suite
from evalctl.plugin_loader import get_tool
from evalctl.tools.base import Tool
from evalctl.tools.declared import build_tool


def suite_tools(suite: Suite) -> dict[str, Tool]:
    # A declaration in the suite file wins over a registered tool of the same name: it is
    # the more specific statement of what this suite means.
    declared = {d.name: d for d in suite.table.tool}
    return {
        name: build_tool(declared[name], suite.directory) if name in declared else get_tool(name)
        for name in suite.table.tools
    }
