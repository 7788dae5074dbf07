"""What a suite may `require`, and how to tell whether this run can provide it.

Capabilities are the provider's; resources are registered by plugins (`evalctl.plugin`,
`add_resource`); conditions are written in the suite itself: `env:NAME` (set and not
empty), `host:NAME` (resolves), `tcp:HOST:PORT` (accepts a connection within 2 s) and
`http:URL` (answers with a status below 500 within 5 s), each with `${VAR}` expanded from
the environment. A need that is not met turns the suite's cases into `skipped` with the
reason: never failures, never silently absent from the results.
"""

from __future__ import annotations

import http.client
import os
import re
import socket
import urllib.parse
from collections.abc import Mapping
from typing import Any

from evalctl.cases.schema import Suite
from evalctl.config import Settings
from evalctl.errors import EvalctlError
from evalctl.providers.base import CAPABILITIES, Provider

# The condition forms, by prefix; checked against the environment and the network.
CONDITIONS = ("env", "host", "tcp", "http")
TCP_TIMEOUT_S = 2.0
HTTP_TIMEOUT_S = 5.0
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_condition(need: str) -> bool:
    """`env:...`, `host:...`, `tcp:...` or `http:...`: a condition, not a capability."""
    return need.partition(":")[0] in CONDITIONS and ":" in need


def condition_problem(need: str) -> str | None:
    """Why a condition is not well formed (checked when the suite loads), or None. Parts
    given as `${VAR}` are checked once expanded, when the run starts."""
    kind, _, rest = need.partition(":")
    if not rest:
        return f"{kind}: needs a value after the colon"
    if kind == "env" and not _ENV_NAME.match(rest):
        return f"env: {rest!r} is not a variable name"
    if kind == "tcp":
        host, sep, port = rest.rpartition(":")
        if not sep or not host:
            return "tcp: write tcp:HOST:PORT"
        if "${" not in port and not (port.isdigit() and 0 < int(port) < 65536):
            return f"tcp: {port!r} is not a port (1-65535)"
    if kind == "http" and not rest.startswith(("http://", "https://", "${")):
        return f"http: {rest!r} is not an http:// or https:// URL (http:http://host/health)"
    return None


def expand(text: str, env: Mapping[str, str]) -> tuple[str, str | None]:
    """`text` with each `${VAR}` from `env`, and the first variable that is not set (None
    when every one is)."""
    missing: list[str] = []

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if not env.get(name):
            missing.append(name)
            return ""
        return env[name]

    expanded = _VAR.sub(value, text)
    return expanded, (missing[0] if missing else None)


def unmet_condition(need: str, env: Mapping[str, str] | None = None) -> str | None:
    """None when the condition holds, else why not, in words."""
    env = os.environ if env is None else env
    kind, _, raw = need.partition(":")
    rest, missing = expand(raw, env)
    if missing is not None:
        return f"environment variable {missing} is not set"
    if kind == "env":
        return None if env.get(rest) else f"environment variable {rest} is not set"
    if kind == "host":
        try:
            socket.getaddrinfo(rest, None)
        except (OSError, UnicodeError) as exc:
            return f"host {rest!r} does not resolve ({exc})"
        return None
    if kind == "tcp":
        host, _, port = rest.rpartition(":")
        if not port.isdigit():
            return f"{port!r} is not a port"
        try:
            with socket.create_connection((host.strip("[]"), int(port)), TCP_TIMEOUT_S):
                return None
        except (OSError, OverflowError, UnicodeError) as exc:
            return f"nothing accepts connections at {host}:{port} ({exc})"
    return _http_unmet(rest)


def _http_unmet(url: str) -> str | None:
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return f"{url!r} is not an http:// or https:// URL"
    connection_type = (
        http.client.HTTPSConnection if parsed.scheme == "https" else http.client.HTTPConnection
    )
    connection = connection_type(parsed.hostname, parsed.port, timeout=HTTP_TIMEOUT_S)
    path = urllib.parse.urlunsplit(("", "", parsed.path or "/", parsed.query, ""))
    try:
        connection.request("GET", path)
        status = connection.getresponse().status
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return f"{url} did not answer ({exc or type(exc).__name__})"
    finally:
        connection.close()
    return None if status < 500 else f"{url} answered {status}"


def unmet_conditions(requires: list[str], env: Mapping[str, str] | None = None) -> str | None:
    """The first condition of `requires` that is not met, as the skip reason; None when
    every one holds (capabilities and resources are not looked at)."""
    for need in requires:
        if is_condition(need):
            problem = unmet_condition(need, env)
            if problem is not None:
                return f"requirement {need!r} not met: {problem}"
    return None


def known_requirements() -> frozenset[str]:
    from evalctl.plugin_loader import registry

    return CAPABILITIES | frozenset(registry().names("resource"))


def unmet_requirement(
    suite: Suite, provider: Provider, settings: Settings, opened: dict[str, Any] | None = None
) -> str | None:
    """None when every need is met, else why not. Resources with an opener are opened into
    `opened` (the suite's `ctx.resources`) once their check passes."""
    from evalctl.plugin_loader import registry

    for need in suite.table.requires:
        if is_condition(need):
            problem = unmet_condition(need)
            if problem is not None:
                return f"requirement {need!r} not met: {problem}"
            continue
        if need in CAPABILITIES:
            if need not in provider.capabilities:
                return f"provider {provider.name!r} lacks the {need!r} capability"
            continue
        resource = registry().resource(need)
        if resource is None:
            return f"unknown requirement {need!r}"
        check, open_ = resource
        problem = check(settings, suite)
        if problem is None and open_ is not None and opened is not None:
            try:
                opened[need] = open_(settings, suite)
            except EvalctlError as exc:
                problem = exc.message
        if problem is not None:
            return f"requirement {need!r} not met: {problem}"
    return None
