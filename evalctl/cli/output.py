"""Output plumbing shared by commands: a command builds a pydantic model, then either prints
it as JSON (`--json`) or hands it to its Rich renderer. Errors go to stderr, never tracebacks."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

from pydantic import BaseModel
from rich.console import Console

from evalctl.errors import EvalctlError

M = TypeVar("M", bound=BaseModel)

stdout = Console(highlight=False)
stderr = Console(stderr=True, highlight=False)


def emit(model: M, as_json: bool, render: Callable[[M], None]) -> None:
    if as_json:
        sys.stdout.write(model.model_dump_json(indent=2) + "\n")
        sys.stdout.flush()
    else:
        render(model)


def print_error(exc: EvalctlError) -> None:
    stderr.print(f"[bold red]error:[/] {exc.message}", markup=True, soft_wrap=True)
    if exc.hint:
        stderr.print(f"[dim]hint:[/] {exc.hint}", markup=True, soft_wrap=True)
