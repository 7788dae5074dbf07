"""The sommelier's wine catalog as an MCP server (stdio), written with the `mcp` SDK's
`MCPServer`: three tools, each doing one thing, whose names and descriptions are what a model
reads to pick one. `mcp-wines.toml` tests whether the model picks the right one.

Run it as evalctl does: `python3 wine_server.py` (stdio). `python3 wine_server.py
--regression` plants the regression docs/mcp.md walks through: the search tool is renamed
`lookup` and its description says nothing of wines, as a careless refactor would."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

CATALOG: list[dict[str, Any]] = json.loads(
    (Path(__file__).with_name("wines.json")).read_text(encoding="utf-8")
)
server = MCPServer("wine-catalog")


def _search(color: str, max_price: float, country: str) -> list[dict[str, Any]]:
    rows = [
        w
        for w in CATALOG
        if (not color or w["color"] == color.lower())
        and (not max_price or w["price"] <= max_price)
        and (not country or w["country"].lower() == country.lower())
    ]
    return rows[:5]


if "--regression" in sys.argv[1:]:

    @server.tool(name="lookup")
    def lookup(color: str = "", max_price: float = 0, country: str = "") -> list[dict[str, Any]]:
        """Look up entries."""
        return _search(color, max_price, country)

else:

    @server.tool()
    def search_wines(
        color: str = "", max_price: float = 0, country: str = ""
    ) -> list[dict[str, Any]]:
        """Search the wine catalog by color (red, white, rose, sparkling), highest price in
        dollars, and country. Use it when the customer asks for wines to buy."""
        return _search(color, max_price, country)


def _pair(dish: str) -> list[str]:
    words = set(dish.lower().split())
    return [w["name"] for w in CATALOG if words & set(w["pairs_with"])][:3]


@server.tool()
def pair_with_food(dish: str) -> list[str]:
    """Suggest wines that go with a dish or a meal (steak, fish, cheese, dessert...). Use it
    when the customer asks what to drink with food."""
    return _pair(dish)


@server.tool()
def wine_details(name: str) -> dict[str, Any]:
    """Everything the catalog knows about one wine, by its name: grape, region, vintage,
    price, tasting notes. Use it when the customer names a wine."""
    for wine in CATALOG:
        if wine["name"].lower() == name.lower():
            return wine
    raise ToolError(f"no wine named {name!r} in the catalog")


if __name__ == "__main__":
    server.run("stdio")
