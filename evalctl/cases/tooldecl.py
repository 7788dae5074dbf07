"""`[[suite.tool]]`: a tool a suite declares itself, backed by a fixture, a command, a
Python function, or a fixed `mock` reply. Only the shape lives here; `evalctl.tools.declared`
runs them."""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

TOOL_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$"
BACKENDS = ("fixture", "command", "python", "mock")
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]


class ToolDecl(BaseModel):
    """`[[suite.tool]]`: a tool the suite declares, its `parameters` and exactly one backend:
    `fixture` + `key`, `command`, `python` or `mock`."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=TOOL_NAME_PATTERN)
    description: str
    # A JSON Schema object for the arguments, shown to the model as is.
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    # Backend 1: a JSON object file keyed by the value of the argument `key`.
    fixture: str | None = None
    key: str | None = None
    # Backend 2: a process that reads the arguments as JSON on stdin, prints the result JSON.
    command: list[str] | None = Field(default=None, min_length=1)
    # Backend 3: "module:function", called with the arguments as keyword arguments.
    python: str | None = Field(default=None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
    # Backend 4: the value every call returns, for a tool whose calls are only recorded.
    # Any TOML value; whether it was given is read from `model_fields_set` (TOML has no null).
    mock: Any = None
    # Past this (or the case's time left), the call is killed (a command, a python tool's worker)
    # and the model gets a tool error.
    timeout_s: float = Field(default=10.0, gt=0, le=600)
    # Environment variables a command or python tool sees beyond the allowlist
    # (evalctl.tools.environment): a tool gets no API key or token it does not name here.
    env: list[EnvName] = Field(default_factory=list)
    # The most the tool may return, in bytes; default `tool_output_limit` in evalctl.toml.
    max_output_bytes: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _one_backend(self) -> ToolDecl:
        chosen = [b for b in BACKENDS if self._has(b)]
        if len(chosen) != 1:
            found = ", ".join(chosen) if chosen else "none"
            raise ValueError(
                f"declare exactly one of fixture, command, python, mock (found: {found})"
            )
        if self.fixture is not None and self.key is None:
            raise ValueError("a fixture-backed tool needs `key`: the argument that picks the entry")
        if self.fixture is None and self.key is not None:
            raise ValueError("`key` applies only to a fixture-backed tool")
        if (self.fixture is not None or self._has("mock")) and self.env:
            raise ValueError("`env` applies only to a command or python tool")
        if self._has("mock"):
            _check_json(self.mock)
        return self

    def _has(self, backend: str) -> bool:
        if backend == "mock":
            return "mock" in self.model_fields_set
        return getattr(self, backend) is not None

    @property
    def backend(self) -> str:
        return next(b for b in BACKENDS if self._has(b))


def _check_json(value: Any) -> None:
    """The mock is what the model reads back and the results keep: JSON, which has no form
    for a TOML date or time."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"`mock` must be a JSON value (a TOML date or time is not): {exc}"
        ) from None


# A server's name is what a case's `mcp = [...]` and every message name it by.
MCP_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"


class McpDecl(BaseModel):
    """`[[suite.mcp]]`: a Model Context Protocol server whose tools the suite offers, started
    over stdio (`command`, with `env` and `cwd`) or reached over streamable HTTP (`url`, with
    `headers`); docs/mcp.md. Its tools are known only once it answers (evalctl.mcp_toolset)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=MCP_NAME_PATTERN)
    # stdio: the program and its arguments, started once per run (per case with `per_case`).
    command: list[str] | None = Field(default=None, min_length=1)
    # Variables the server sees beyond the allowlist (evalctl.tools.environment); a value's
    # `${VAR}` reads evalctl's environment, and is redacted wherever evalctl writes.
    env: dict[EnvName, str] = Field(default_factory=dict)
    # Where the server runs, relative to the suite file's folder (inside its project).
    cwd: str | None = None
    # Streamable HTTP: the endpoint; `${VAR}` in it and in `headers` as an http target's.
    url: str | None = Field(default=None, min_length=1)
    headers: dict[str, str] = Field(default_factory=dict)
    # Globs (fnmatch) over the names the server gives: which of its tools are offered.
    tools: list[str] = Field(default_factory=lambda: ["*"], min_length=1)
    # The most one call may take (or the case's time left, if less); then a tool error.
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    # Put before each of its tools' names, to avoid a clash with another server's or a
    # declared tool's: `prefix = "fs_"` offers `read_file` as `fs_read_file`.
    prefix: str = Field(default="", pattern=r"^[A-Za-z0-9_-]{0,32}$")
    # A fresh server for every case (a server that keeps state between calls).
    per_case: bool = False
    # A server that cannot start or answer errors the suite's cases (default: they are
    # skipped, saying why, as an unmet `requires` skips them).
    required: bool = False

    @model_validator(mode="after")
    def _one_transport(self) -> McpDecl:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of `command` (stdio) or `url` (streamable HTTP)")
        if self.url is not None and (self.env or self.cwd is not None):
            raise ValueError("`env` and `cwd` apply only to a stdio server (`command`)")
        if self.command is not None and self.headers:
            raise ValueError("`headers` apply only to an HTTP server (`url`)")
        return self

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"
