"""Which modules provide which subcommands, and how `evalctl` loads only the one it runs.

Importing every command module costs more than the rest of the start-up together (they pull
in pydantic models, the runner, the results and report code), so `main()` imports only the
module of the command on the command line. For `evalctl --help` (or no or an unknown
command) it registers light stand-ins that carry each command's one-line help, so the list
looks the same without importing anything; tests/test_cli_startup.py checks it matches the
real commands' help. Each module exposes `register(app)`.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass

import typer


@dataclass(frozen=True)
class CommandEntry:
    module: str  # under evalctl.cli
    summary: str  # the first paragraph of the command's help, as `evalctl --help` lists it
    group: bool = False  # a command with subcommands (`evalctl server start`, ...)


# In `evalctl --help` order (Typer lists plain commands first, then groups).
COMMANDS: dict[str, CommandEntry] = {
    "init": CommandEntry(
        "init",
        "Write a starter suite: cases/starter.toml (an `assert` suite with a fixture-backed\n"
        "tool), its fixture, and a reply script that makes a scripted run pass.",
    ),
    "run": CommandEntry("run", "Run golden cases against a provider and write versioned results."),
    "cases": CommandEntry("cases", "List and validate case suites.", group=True),
    "providers": CommandEntry(
        "providers",
        "List providers, whether each is available, and the reason when it is not.",
    ),
    "plugins": CommandEntry(
        "plugins",
        "List the kinds, tools, checks, resources and settings plugins register, and the "
        "plugin\n(built-in, entry point or evalctl.toml) each comes from.",
    ),
    "baseline": CommandEntry(
        "baseline", "Write the per-provider baseline that `evalctl compare` gates against."
    ),
    "compare": CommandEntry("compare", "Gate results on a baseline, or diff two runs."),
    "models": CommandEntry("models", "List and verify local GGUF models.", group=True),
    "server": CommandEntry("server", "Run and manage the local inference daemon.", group=True),
    "report": CommandEntry(
        "report",
        "Render results as one self-contained HTML page and/or as runbook Markdown.",
    ),
    "gate": CommandEntry(
        "gate",
        "Say whether CI's quality job must run (`run=true|false`), with the reason and files.",
    ),
    "merge": CommandEntry(
        "merge",
        "Merge the shards of one run (`evalctl run --shard i/n`) into one results file.",
    ),
    "soak": CommandEntry(
        "soak",
        "Soak the local daemon: N requests on one warm daemon, its memory sampled throughout.",
    ),
    "crash-test": CommandEntry(
        "crash_test",
        "SIGKILL the local daemon and prove the client notices and recovers on its own.",
    ),
}


def requested(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line: the first argument that is not an option
    (the root has no option that takes a value)."""
    for arg in argv:
        if not arg.startswith("-"):
            return arg
    return None


def register_all(app: typer.Typer) -> None:
    """Every command module, for real (tests compare the stand-ins with this)."""
    for entry in COMMANDS.values():
        importlib.import_module(f"evalctl.cli.{entry.module}").register(app)


def register(app: typer.Typer, argv: Sequence[str]) -> None:
    """The module of the command in `argv` if there is one, else the help stand-ins."""
    entry = COMMANDS.get(requested(argv) or "")
    if entry is not None:
        importlib.import_module(f"evalctl.cli.{entry.module}").register(app)
        return
    for name, known in COMMANDS.items():
        if known.group:
            app.add_typer(typer.Typer(), name=name, help=known.summary)
        else:
            app.command(name, help=known.summary)(_listed_only)


def _listed_only() -> None:
    # Never runs: a command named on the command line gets its real module instead.
    raise AssertionError("stand-in command invoked")
