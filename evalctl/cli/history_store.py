"""Which run store a command records in, and the options that choose it.

The one rule (docs/history.md): `--no-store` turns it off; else `--store URL`; else
EVALCTL_STORE; else `[history] store` in the trusted evalctl.toml (one discovered from a
suite's directory came with the suites and is ignored here: it must not choose where their
runs are sent); else an SQLite file under EVALCTL_HOME. "off" in any of them turns it off.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Annotated, Any

import typer

from evalctl.config import Settings
from evalctl.runner.api import RunRequest

STORE_ENV = "EVALCTL_STORE"

STORE = typer.Option(
    "--store",
    metavar="URL",
    help="Run store to record in or read: a file, sqlite:///PATH or postgresql://... "
    "(default: EVALCTL_STORE, [history] store, else EVALCTL_HOME/history.sqlite).",
)
NO_STORE = typer.Option("--no-store", help="Record nothing in the run store.")

StoreOpt = Annotated[str | None, STORE]
NoStoreOpt = Annotated[bool, NO_STORE]


def store_url(
    settings: Settings, env: Mapping[str, str], flag: str | None = None, off: bool = False
) -> str | None:
    """The store's URL, or None when it is off."""
    from evalctl.history.store import DEFAULT_FILE, OFF

    if off:
        return None
    configured = settings.history.store if settings.trusted else None
    for value in (flag, env.get(STORE_ENV), configured):
        if value is not None:
            return None if value.strip().lower() in OFF else value.strip()
    return str(settings.private_home() / DEFAULT_FILE)


# Marks, among the command's warnings, that the store's failure was already reported.
_WARNED = "\0run-store"


def _warn(text: str) -> None:
    """Once per command: a store that failed once fails for the next cell or verdict too."""
    from evalctl.cli import output

    if _WARNED in output._State.warned:
        return
    output._State.warned.add(_WARNED)
    output.warn_once(text)


def where_it_ran(settings: Settings, env: Mapping[str, str]) -> Any:
    from evalctl.history.record import project_dir, provenance

    return provenance(env, project_dir(settings.config_file))


def with_store(
    request: RunRequest,
    settings: Settings,
    env: Mapping[str, str],
    flag: str | None,
    off: bool,
) -> RunRequest:
    """`request` with the store's listener added, unless the store is off. A store that
    cannot even be placed (an EVALCTL_HOME that cannot be made) warns, as a failed write
    does, and the run goes on without it."""
    from evalctl.errors import EvalctlError

    try:
        url = store_url(settings, env, flag, off)
    except EvalctlError as exc:
        _warn(f"the run store is off for this run: {exc.message}")
        return request
    if url is None:
        return request
    from evalctl.history.listener import StoreListener

    listener = StoreListener(url, where_it_ran(settings, env), _warn)
    return dataclasses.replace(request, listeners=(*request.listeners, listener))


def record_verdict(
    settings: Settings,
    env: Mapping[str, str],
    flag: str | None,
    off: bool,
    *,
    kind: str,
    subject: str,
    outcome: str,
    exit_code: int,
    body: Mapping[str, Any],
) -> None:
    """Record a `baseline`, `compare`, `soak` or `crash-test` verdict; a failed write warns
    once and changes nothing else."""
    from evalctl.errors import EvalctlError

    try:
        url = store_url(settings, env, flag, off)
    except EvalctlError as exc:
        _warn(f"the run store is off for this verdict: {exc.message}")
        return
    if url is None:
        return
    from evalctl.history.listener import record_verdict_safely

    record_verdict_safely(
        url,
        where_it_ran(settings, env),
        _warn,
        kind=kind,
        subject=subject,
        outcome=outcome,
        exit_code=exit_code,
        body=body,
    )
