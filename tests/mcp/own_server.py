"""The project's own MCP server for the tests (tests/test_mcp.py), written with the `mcp`
SDK's `MCPServer`: `python own_server.py stdio`, or `python own_server.py http PORT`
(streamable HTTP on 127.0.0.1:PORT/mcp)."""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

server = MCPServer("evalctl-test-server")
_calls = {"count": 0}


class Weather(BaseModel):
    city: str
    celsius: int


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def weather(city: str) -> Weather:
    """Today's weather in a city (structured content)."""
    return Weather(city=city, celsius=len(city))


@server.tool()
def refuse(reason: str) -> str:
    """Always fails, saying why: an isError result."""
    raise ToolError(f"refused: {reason}")


@server.tool()
def counter() -> int:
    """How many times this tool was called in this server process."""
    _calls["count"] += 1
    return _calls["count"]


@server.tool()
def secret_env() -> str:
    """The value of MCP_TEST_TOKEN in the server's environment."""
    return os.environ.get("MCP_TEST_TOKEN", "<unset>")


@server.tool()
def crash() -> str:
    """Ends the server's process at once, mid-call."""
    os._exit(3)


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
