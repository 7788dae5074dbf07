"""An MCP server as a suite's toolset (`[[suite.mcp]]`, docs/mcp.md): opened (started over
stdio, or reached over streamable HTTP), its tools listed and offered under the names the
server gives them (plus the suite's `prefix`), each call sent through the official `mcp`
client, then closed.

The `mcp` SDK is asyncio: each open toolset owns one event-loop thread, on which the client
session lives from `open` to `close`; a tool call from any case's thread is handed to that
loop and waited for. A stdio server runs under the launcher (`evalctl.launch`), started from
that thread, which lives as long as the toolset: when evalctl dies, even by SIGKILL, the
launcher's death signal ends the server's whole process group; `close` ends it too, and
sweeps what carries the toolset's token. A server that dies mid-run closes its pipe: the
pending call and every later one fail as tool errors naming it and its stderr's tail.

Everything a server answers with is the feature under test: an `isError` result, a JSON-RPC
error, a timeout, a dead server are tool errors the model sees (`ToolFailedError`), never a
case error. The SDK is imported here only, when a toolset opens, so that commands that start
no server never pay for it (`[tool.importlinter]`'s vendor-SDK contract).
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import os
import re
import signal
import sys
import tempfile
import threading
import uuid
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import TimeoutError as FutureTimeoutError
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalctl import launch, secrets
from evalctl.cases.tooldecl import TOOL_NAME_PATTERN, McpDecl
from evalctl.chat import ToolDef
from evalctl.errors import EvalctlError
from evalctl.json_schema import schema_problem
from evalctl.providers.targets.http_target import expand
from evalctl.tools.base import Tool, ToolContext, ToolFailedError, ToolOutput, to_json
from evalctl.tools.command import resolve_command
from evalctl.tools.environment import tool_environment

if TYPE_CHECKING:
    from mcp.client.session import ClientSession
    from mcp_types import CallToolResult
    from mcp_types import Tool as ListedTool

_LAUNCHER = str(Path(launch.__file__).resolve())
_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)
# How much of a stdio server's stderr an error quotes.
_STDERR_TAIL = 400
# Past the call's own timeout, how long to wait for the loop to hand back its cancellation.
_CALL_GRACE_S = 5.0
# The SDK's shutdown of a stdio server waits up to ~6 s (stdin closed, SIGTERM, SIGKILL).
_CLOSE_WAIT_S = 15.0


class McpServerError(EvalctlError):
    """An MCP server could not be started, could not answer, or offered tools a provider
    would refuse: the suite is skipped with this reason (errored where `required`)."""


def _installed() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise McpServerError(
            "the `mcp` package is not installed",
            hint="pip install 'evalctl[mcp]' (make setup installs it)",
        ) from None


class McpTool(Tool):
    """One of a server's tools, as the model sees it; `run` calls it through the toolset."""

    # The server is the judge of its arguments: a call that breaks the listed schema is still
    # sent (the record lists what broke it), and the server's answer is what the model sees.
    lenient_arguments = True

    def __init__(self, toolset: McpToolset, remote: str, definition: ToolDef):
        self.definition = definition
        self._toolset = toolset
        self._remote = remote

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        timeout = ctx.call_timeout(self._toolset.decl.timeout_s)
        result = self._toolset.call(self._remote, arguments, timeout)
        text = result_text(result)
        data: dict[str, Any] = {
            "server": self._toolset.decl.name,
            "tool": self._remote,
            "content": [
                item.model_dump(mode="json", by_alias=True, exclude_none=True)
                for item in result.content
            ],
            "structured_content": result.structured_content,
            "is_error": bool(result.is_error),
        }
        limit = ctx.settings.tool_output_limit
        if len(text.encode("utf-8", errors="replace")) > limit:
            raise ToolFailedError(
                f"the MCP server's answer is longer than {limit} bytes (tool_output_limit)"
            )
        if result.is_error:
            raise ToolFailedError(text or "the server answered isError, with no text", data=data)
        return ToolOutput(content=text, data=data)


def result_text(result: CallToolResult) -> str:
    """What the model reads of a result: its text items in order (other items named by their
    kind), or, where it has none, its structured content as JSON."""
    parts: list[str] = []
    for item in result.content:
        text = getattr(item, "text", None)
        if isinstance(text, str):
            parts.append(text)
            continue
        resource = getattr(item, "resource", None)
        inner = getattr(resource, "text", None)
        if isinstance(inner, str):
            parts.append(inner)
        else:
            mime = getattr(item, "mime_type", None) or getattr(resource, "mime_type", None)
            parts.append(f"[{item.type}{': ' + mime if mime else ''}]")
    if not parts and result.structured_content is not None:
        return to_json(result.structured_content)
    return "\n".join(parts)


class McpToolset:
    """One `[[suite.mcp]]` server for a run (or a case): `open`, then `tools`, then `close`."""

    def __init__(self, decl: McpDecl, suite_dir: Path, env: Mapping[str, str] | None = None):
        self.decl = decl
        self._suite_dir = suite_dir
        self._env = os.environ if env is None else env
        self.tools: dict[str, McpTool] = {}
        self._token = uuid.uuid4().hex
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._session: ClientSession | None = None
        self._listed: list[ListedTool] = []
        self._failure: BaseException | None = None
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._errlog: Any = None
        self._secret_values: tuple[str, ...] = ()
        # `env` (stdio) or `headers` (HTTP), and the URL, with their `${VAR}` read.
        self._values: dict[str, str] = {}
        self._url = ""

    # -- lifecycle ---------------------------------------------------------------------

    def open(self) -> None:
        """Start or reach the server and list its tools: `tools` holds the offered ones.
        McpServerError says why not (and nothing of it is left running)."""
        _installed()
        # In this thread, before anything starts: an unset `${VAR}` is bad input (exit 2)
        # naming the field, not a server that failed.
        self._values = self._expanded(
            self.decl.env if self.decl.command is not None else self.decl.headers,
            "env" if self.decl.command is not None else "headers",
        )
        if self.decl.url is not None:
            self._url, used = expand(self.decl.url, self._env, f"mcp {self.decl.name}.url", None)
            self._secret_values = (*self._secret_values, *(self._env[name] for name in used))
            secrets.remember_values(self._secret_values)
        if self.decl.command is not None:
            # Kept open until `close`: the server's stderr, quoted when it fails.
            self._errlog = tempfile.TemporaryFile()  # noqa: SIM115
        self._thread = threading.Thread(
            target=self._serve, name=f"evalctl-mcp-{self.decl.name}", daemon=True
        )
        self._thread.start()
        answered = self._ready.wait(self.decl.timeout_s)
        try:
            if not answered:
                raise McpServerError(
                    f"{self.describe()} did not answer within {self.decl.timeout_s:g}s"
                    + self._stderr_said()
                )
            if self._failure is not None:
                raise McpServerError(
                    f"{self.describe()} could not be "
                    f"{'started' if self.decl.command else 'reached'}: "
                    f"{self._redact(_reason(self._failure))}" + self._stderr_said()
                )
            self.tools = self._offer(self._listed)
        except McpServerError:
            self.close()
            raise

    def close(self) -> None:
        """End the session (and a stdio server's process group); safe to call twice."""
        loop, stop, thread = self._loop, self._stop, self._thread
        if loop is not None and stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(stop.set)
        if thread is not None:
            thread.join(_CLOSE_WAIT_S)
        if self.decl.command is not None:
            # What a launcher killed before it could clean up left behind.
            for _ in range(10):
                left = launch.marked(self._token)
                if not left:
                    break
                for pid in left:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGKILL)
        if self._errlog is not None:
            with contextlib.suppress(OSError):
                self._errlog.close()
            self._errlog = None
        self._thread = None

    def describe(self) -> str:
        where = " ".join(self.decl.command) if self.decl.command else self.decl.url or ""
        return f"MCP server {self.decl.name!r} ({self._redact(where)})"

    # -- calls -------------------------------------------------------------------------

    def call(self, name: str, arguments: dict[str, Any], timeout: float) -> CallToolResult:
        """The server's answer to one call; ToolFailedError for anything but an answer."""
        loop, session = self._loop, self._session
        if loop is None or session is None or not self._alive():
            raise ToolFailedError(f"{self.describe()} is not running" + self._stderr_said())
        if timeout <= 0:
            raise ToolFailedError("the case's time ran out before the call")
        future = asyncio.run_coroutine_threadsafe(
            session.call_tool(name, arguments, read_timeout_seconds=timeout), loop
        )
        try:
            return future.result(timeout + _CALL_GRACE_S)
        except FutureTimeoutError:
            future.cancel()
            raise ToolFailedError(f"timed out after {timeout:g}s") from None
        except Exception as exc:
            from mcp.shared.exceptions import MCPError

            if isinstance(exc, MCPError) and "connection closed" in exc.error.message.lower():
                detail = f"{self.describe()} closed the connection (it exited, or hung up)"
            elif isinstance(exc, MCPError):
                detail = f"the server answered with error {exc.error.code}: {exc.error.message}"
            else:
                detail = f"{self.describe()} failed the call: {_reason(exc)}"
            if not self._alive() or "closed the connection" in detail:
                detail += self._stderr_said()
            raise ToolFailedError(self._redact(detail)) from None

    # -- the loop thread ---------------------------------------------------------------

    def _alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _serve(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # the thread's end: said by `open` or the next call
            self._failure = self._failure or exc
        finally:
            self._session = None
            self._ready.set()

    async def _main(self) -> None:
        from mcp.client.session import ClientSession
        from mcp_types import PaginatedRequestParams

        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with AsyncExitStack() as stack:
            read, write = await stack.enter_async_context(self._transport())
            session = await stack.enter_async_context(ClientSession(read, write))
            await session.initialize()
            listed: list[ListedTool] = []
            cursor: str | None = None
            for _ in range(100):  # a server paging without end cannot hang the open
                page = await session.list_tools(
                    params=PaginatedRequestParams(cursor=cursor) if cursor else None
                )
                listed.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            self._listed, self._session = listed, session
            self._ready.set()
            await self._stop.wait()

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[Any]:
        if self.decl.command is not None:
            from mcp.client.stdio import StdioServerParameters, stdio_client

            argv = resolve_command(self.decl.command, self._suite_dir)
            env = tool_environment([], self._env)
            env.update(self._values)
            # The launcher (started from this thread, which outlives the server) ends the
            # server's group when evalctl dies; the token finds what a killed launcher left.
            env[launch.PARENT_ENV] = str(os.getpid())
            env[launch.CALL_ENV] = self._token
            cwd = self._suite_dir / self.decl.cwd if self.decl.cwd else self._suite_dir
            params = StdioServerParameters(
                command=sys.executable, args=["-I", "-S", _LAUNCHER, *argv], env=env, cwd=cwd
            )
            async with stdio_client(params, errlog=self._errlog) as streams:
                yield streams
            return
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        assert self.decl.url is not None
        url, headers = self._url, self._values
        timeout = httpx2.Timeout(self.decl.timeout_s, read=max(self.decl.timeout_s, 300.0))
        async with (
            httpx2.AsyncClient(headers=headers, timeout=timeout) as client,
            streamable_http_client(url, http_client=client) as streams,
        ):
            yield streams

    def _expanded(self, values: Mapping[str, str], field: str) -> dict[str, str]:
        """`values` with `${VAR}` read from the environment; what they read is redacted."""
        out: dict[str, str] = {}
        used: list[str] = []
        for key, raw in values.items():
            out[key], more = expand(raw, self._env, f"mcp {self.decl.name}.{field}.{key}", None)
            used += more
        # By value, whatever the name: headers and a server's environment carry credentials.
        self._secret_values = (*self._secret_values, *(self._env[n] for n in used))
        secrets.remember_values(self._secret_values)
        return out

    # -- what is offered ---------------------------------------------------------------

    def _offer(self, listed: list[ListedTool]) -> dict[str, McpTool]:
        """The listed tools that `tools` chooses, under their offered names; McpServerError
        for a name or schema a provider would refuse, or a glob that chose nothing."""
        chosen: dict[str, McpTool] = {}
        for tool in listed:
            if not any(fnmatch.fnmatchcase(tool.name, glob) for glob in self.decl.tools):
                continue
            offered = self.decl.prefix + tool.name
            where = f"{self.describe()}: tool {tool.name!r}"
            if not _TOOL_NAME.match(offered):
                raise McpServerError(
                    f"{where}: the name {offered!r} is one a provider would refuse "
                    "(letters, digits, '_' and '-', at most 64, not starting with a digit or '-')",
                    hint="leave it out with `tools` globs, or change it with `prefix`",
                )
            # Which draft the server wrote it in: a provider reads a tool's schema in its own
            # dialect, and some refuse keys they do not know.
            schema = {k: v for k, v in tool.input_schema.items() if k != "$schema"}
            problem = schema_problem(schema)
            if schema.get("type") != "object":
                problem = problem or "its input schema is not of type object"
            if problem:
                raise McpServerError(
                    f"{where}: its input schema is one a provider would refuse: {problem}",
                    hint="leave it out with `tools` globs",
                )
            if offered in chosen:
                raise McpServerError(f"{where}: listed twice")
            description = tool.description or ""
            definition = ToolDef(name=offered, description=description, parameters=schema)
            chosen[offered] = McpTool(self, tool.name, definition)
        names = [t.name for t in listed]
        for glob in self.decl.tools:
            if not any(fnmatch.fnmatchcase(n, glob) for n in names):
                raise McpServerError(
                    f"{self.describe()} offers no tool matching {glob!r} "
                    f"(it lists: {', '.join(names) or 'none'})"
                )
        return chosen

    # -- messages ----------------------------------------------------------------------

    def _redact(self, text: str) -> str:
        return secrets.redact(text, extra=self._secret_values)

    def _stderr_said(self) -> str:
        log = self._errlog
        if log is None:
            return ""
        try:
            log.seek(0, os.SEEK_END)
            size = log.tell()
            log.seek(max(0, size - _STDERR_TAIL))
            tail = log.read().decode("utf-8", errors="replace").strip()
        except (OSError, ValueError):
            return ""
        if launch.CANNOT_START in tail:
            tail = tail[tail.index(launch.CANNOT_START) + len(launch.CANNOT_START) :]
        return f"; its stderr: {self._redact(tail)}" if tail else ""


def _reason(exc: BaseException) -> str:
    """The innermost message of an exception (anyio's task groups wrap them in groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
