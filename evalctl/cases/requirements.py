"""What a suite may `require`, and how to tell whether this run can provide it.

Capabilities are the provider's; resources are registered by plugins (`evalctl.plugin`,
`add_resource`); conditions are written in the suite itself: `env:NAME` (set and not
empty), `host:NAME` (resolves), `tcp:HOST:PORT` (accepts a connection within 2 s) and
`http:URL` (answers with a status below 500 within 5 s, all of it: a server trickling its
headers is cut off at the deadline), each with `${VAR}` expanded from the environment. A
need that is not met turns the suite's cases into `skipped` with the reason: never failures,
never silently absent from the results. The reason names the condition as written: the
value of a `${VAR}` never appears in it, so no output (stdout, results, journal) shows it.
A run checks each condition once, however many suites require it (`ConditionChecks`).
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import socket
import threading
import urllib.parse
from collections.abc import Callable, Mapping
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
    if kind == "http":
        return _url_problem(rest)
    return None


def _url_problem(url: str) -> str | None:
    """Why an `http:` condition's URL cannot be requested, judged before expansion: each
    `${VAR}` stands for a value that parses (its own value is checked when the run starts)."""
    example = "(http:http://host/health)"
    if not url.startswith(("http://", "https://", "${")):
        return f"http: {url!r} is not an http:// or https:// URL {example}"
    probe = _VAR.sub("1", url)
    try:
        parsed = urllib.parse.urlsplit(probe)
        parsed.port  # noqa: B018 - raises ValueError for a port that is not one
    except ValueError as exc:
        return f"http: {url!r} is not a URL that parses ({exc}) {example}"
    if not url.startswith("${") and not parsed.hostname:
        return f"http: {url!r} names no host {example}"
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
    """None when the condition holds, else why not, in words: the condition as written, the
    value of each `${VAR}` in it replaced by `${VAR}` again wherever the reason would show it
    (a host, a URL, an error's text)."""
    env = os.environ if env is None else env
    kind, _, raw = need.partition(":")
    rest, missing = expand(raw, env)
    if missing is not None:
        return f"environment variable {missing} is not set"
    if kind == "env":
        return None if env.get(rest) else f"environment variable {rest} is not set"
    # The reason shows the condition as written, and an error's own text with each value
    # written back as its variable: a value may be a secret that looks like none.
    values = {env[name]: f"${{{name}}}" for name in _VAR.findall(raw) if env.get(name)}
    return _unmet(kind, rest, raw, lambda exc: _masked(_text(exc), values))


def _text(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _masked(text: str, values: Mapping[str, str]) -> str:
    """`text` with each value written back as its `${NAME}`, longest first (one value may
    hold another), in the forms an error may quote it in."""
    for value in sorted(values, key=len, reverse=True):
        for form in (value, repr(value)[1:-1], urllib.parse.quote(value, safe="")):
            text = text.replace(form, values[value])
    return text


def _unmet(kind: str, rest: str, shown: str, why: Callable[[BaseException], str]) -> str | None:
    """Whether the expanded condition `rest` holds; the reason names it as `shown` (as
    written) and words an error through `why`."""
    if kind == "host":
        try:
            socket.getaddrinfo(rest, None)
        except (OSError, UnicodeError) as exc:
            return f"host {shown!r} does not resolve ({why(exc)})"
        return None
    if kind == "tcp":
        host, _, port = rest.rpartition(":")
        if not port.isdigit():
            return f"{shown!r} does not end in a port"
        try:
            with socket.create_connection((host.strip("[]"), int(port)), TCP_TIMEOUT_S):
                return None
        except (OSError, OverflowError, UnicodeError) as exc:
            return f"nothing accepts connections at {shown} ({why(exc)})"
    return _http_unmet(rest, shown, why)


def _http_unmet(url: str, shown: str, why: Callable[[BaseException], str]) -> str | None:
    try:
        parsed = urllib.parse.urlsplit(url)
        port = parsed.port
    except ValueError as exc:  # the expanded value did not parse
        return f"{shown!r} is not a URL that parses ({why(exc)})"
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        return f"{shown!r} is not an http:// or https:// URL"
    connection_type = (
        http.client.HTTPSConnection if parsed.scheme == "https" else http.client.HTTPConnection
    )
    try:
        connection = connection_type(parsed.hostname, port, timeout=HTTP_TIMEOUT_S)
    except (ValueError, http.client.HTTPException) as exc:
        return f"{shown!r} cannot be requested ({why(exc)})"
    path = urllib.parse.urlunsplit(("", "", parsed.path or "/", parsed.query, ""))
    answer: dict[str, Any] = {}

    def ask() -> None:
        try:
            connection.request("GET", path)
            answer["status"] = connection.getresponse().status
        except (OSError, http.client.HTTPException, ValueError) as exc:
            answer["error"] = exc

    # The socket timeout bounds each read, not the whole answer: a server sending a header
    # byte every second would hold the run forever. The request runs on a thread of its own,
    # and past the deadline its socket is shut, which ends the blocked read at once.
    asking = threading.Thread(target=ask, name="evalctl-requires-http", daemon=True)
    asking.start()
    asking.join(HTTP_TIMEOUT_S)
    if asking.is_alive():
        _shut(connection)
        asking.join(HTTP_TIMEOUT_S)
        connection.close()
        return f"{shown} did not answer within {HTTP_TIMEOUT_S:g} s"
    connection.close()
    if "error" in answer:
        return f"{shown} did not answer ({why(answer['error'])})"
    status: int = answer["status"]
    return None if status < 500 else f"{shown} answered {status}"


def _shut(connection: http.client.HTTPConnection) -> None:
    sock = connection.sock
    if sock is None:
        return
    with contextlib.suppress(OSError):  # already closed by the other side
        sock.shutdown(socket.SHUT_RDWR)


class ConditionChecks:
    """The run's answers to its conditions: each is checked once, however many suites
    require it (the environment a run sees does not change while it runs)."""

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = env
        self._answers: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def unmet(self, need: str) -> str | None:
        with self._lock:
            if need not in self._answers:
                self._answers[need] = unmet_condition(need, self._env)
            return self._answers[need]


def unmet_conditions(
    requires: list[str],
    env: Mapping[str, str] | None = None,
    checks: ConditionChecks | None = None,
) -> str | None:
    """The first condition of `requires` that is not met, as the skip reason; None when
    every one holds (capabilities and resources are not looked at)."""
    for need in requires:
        if is_condition(need):
            problem = checks.unmet(need) if checks else unmet_condition(need, env)
            if problem is not None:
                return f"requirement {need!r} not met: {problem}"
    return None


def known_requirements() -> frozenset[str]:
    from evalctl.plugin_loader import registry

    return CAPABILITIES | frozenset(registry().names("resource"))


def unmet_requirement(
    suite: Suite,
    provider: Provider,
    settings: Settings,
    opened: dict[str, Any] | None = None,
    checks: ConditionChecks | None = None,
) -> str | None:
    """None when every need is met, else why not. Resources with an opener are opened into
    `opened` (the suite's `ctx.resources`) once their check passes. `checks`: the run's
    answers to conditions, shared by its suites (None: each is checked now)."""
    from evalctl.plugin_loader import registry

    for need in suite.table.requires:
        if is_condition(need):
            problem = checks.unmet(need) if checks else unmet_condition(need)
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
