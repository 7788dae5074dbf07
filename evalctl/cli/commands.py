"""Which modules provide which subcommands. Each module exposes `register(app)`."""

from __future__ import annotations

import importlib

import typer

# Modules under evalctl.cli that add commands; a missing one is simply not registered yet.
COMMAND_MODULES = (
    "run",
    "cases",
    "providers",
    "baseline",
    "compare",
    "models",
    "server",
    "report",
    "gate",
    "merge",
    "soak",
    "crash_test",
)


def register(app: typer.Typer) -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"evalctl.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"evalctl.cli.{name}":
                raise
            continue
        module.register(app)
