"""Output plumbing shared by commands: a command builds a pydantic model, then either prints
it as JSON (`--json`) or hands it to its Rich renderer. Errors go to stderr, never tracebacks;
with `--json` an error also prints one `{"error": {...}}` object on stdout, unless the command
already printed its result object (a gate failure carries its verdict inside that)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

from evalctl.errors import BadInputError, EvalctlError
from evalctl.secrets import redact

M = TypeVar("M", bound=BaseModel)

stdout = Console(highlight=False)
stderr = Console(stderr=True, highlight=False)


class _State:
    # Whether this process already printed its one result object on stdout.
    emitted = False
    # Warnings already printed by this command (settings are read more than once by some).
    warned: set[str] = set()


def emit(model: M, as_json: bool, render: Callable[[M], None]) -> None:
    if as_json:
        sys.stdout.write(redact(model.model_dump_json(indent=2)) + "\n")
        sys.stdout.flush()
        _State.emitted = True
    else:
        render(model)


def reset_emitted() -> None:
    """For a fresh command in the same process (tests run `main()` many times)."""
    _State.emitted = False
    _State.warned = set()


def warn_once(text: str) -> None:
    """`warning: ...` on stderr, once per command however often it is reached."""
    if text in _State.warned:
        return
    _State.warned.add(text)
    stderr.print("[yellow]warning:[/]", escape(redact(text)), soft_wrap=True)


def print_error(message: str, hint: str | None = None) -> None:
    """`error: ...` (and `hint: ...`) on stderr: an error's or a failed verdict's one line."""
    stderr.print("[bold red]error:[/]", escape(redact(message)), soft_wrap=True)
    if hint:
        stderr.print("[dim]hint:[/]", escape(redact(hint)), soft_wrap=True)


def error_object(
    code: int,
    message: str,
    *,
    file: str | None = None,
    field: str | None = None,
    hint: str | None = None,
    problems: list[dict[str, str | None]] | None = None,
) -> dict[str, dict[str, object]]:
    """The `--json` form of an error: every key always present, null when unknown.

    `problems` holds each bad-input problem apart (file, case_id, field, message): an error
    that carries several (every problem of a suite file) joins them into `message` with
    newlines, which a program should not have to split."""
    return {
        "error": {
            "exit_code": code,
            "message": redact(message),
            "file": file,
            "field": field,
            "hint": redact(hint) if hint is not None else None,
            "problems": [{**p, "message": redact(p["message"] or "")} for p in problems or []],
        }
    }


def print_error_json(payload: dict[str, dict[str, object]]) -> None:
    """Print the error object on stdout, unless a result object is already there."""
    if _State.emitted:
        return
    sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    sys.stdout.flush()
    _State.emitted = True


def error_payload(exc: EvalctlError) -> dict[str, dict[str, object]]:
    file = field = None
    problems: list[dict[str, str | None]] = []
    if isinstance(exc, BadInputError):
        file, field = exc.file, exc.field
        # SuiteErrors (evalctl.cases.loader) carries one BadInputError per problem.
        each: list[BadInputError] = getattr(exc, "errors", None) or [exc]
        problems = [
            {"file": e.file, "case_id": e.case_id, "field": e.field, "message": e.detail}
            for e in each
        ]
    return error_object(
        int(exc.code), exc.message, file=file, field=field, hint=exc.hint, problems=problems
    )
