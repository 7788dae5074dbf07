"""Output plumbing shared by commands: a command builds a pydantic model, then either prints
it as JSON (`--json`) or hands it to its Rich renderer. Errors go to stderr, never tracebacks."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel
from rich.console import Console
from rich.markup import escape

from evalctl.errors import EvalctlError
from evalctl.secrets import redact

M = TypeVar("M", bound=BaseModel)

stdout = Console(highlight=False)
stderr = Console(stderr=True, highlight=False)


def emit(model: M, as_json: bool, render: Callable[[M], None]) -> None:
    if as_json:
        sys.stdout.write(redact(model.model_dump_json(indent=2)) + "\n")
        sys.stdout.flush()
    else:
        render(model)


def print_error(exc: EvalctlError) -> None:
    stderr.print("[bold red]error:[/]", escape(redact(exc.message)), soft_wrap=True)
    if exc.hint:
        stderr.print("[dim]hint:[/]", escape(redact(exc.hint)), soft_wrap=True)
