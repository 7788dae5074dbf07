"""Which modules provide which subcommands. Each module exposes `register(app)`."""

from __future__ import annotations

import importlib

import typer

# Modules under evalctl.cli that add commands, in `evalctl --help` order.
COMMAND_MODULES = (
    "init",
    "run",
    "cases",
    "providers",
    "plugins",
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
        importlib.import_module(f"evalctl.cli.{name}").register(app)
