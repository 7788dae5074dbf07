"""Which modules provide which subcommands, and how `evalctl` loads only the one it runs.

Importing every command module costs more than the rest of the start-up together (they pull
in pydantic models, the runner, the results and report code), so `main()` imports only the
module of the command on the command line. For `evalctl --help` (or no or an unknown
command) it registers light stand-ins that carry each command's one-line help, so the list
looks the same without importing anything; tests/test_cli_startup.py checks it matches the
real commands' help. Each module exposes `register(app)`.

Each module is named by an `import` statement inside a loader function rather than by a
string handed to importlib: the import stays lazy, and the import contract (`make lint`)
still sees every edge from here to a command module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

import typer


def _init() -> ModuleType:
    from evalctl.cli import init

    return init


def _run() -> ModuleType:
    from evalctl.cli import run

    return run


def _cases() -> ModuleType:
    from evalctl.cli import cases

    return cases


def _providers() -> ModuleType:
    from evalctl.cli import providers

    return providers


def _embed() -> ModuleType:
    from evalctl.cli import embed

    return embed


def _plugins() -> ModuleType:
    from evalctl.cli import plugins

    return plugins


def _baseline() -> ModuleType:
    from evalctl.cli import baseline

    return baseline


def _compare() -> ModuleType:
    from evalctl.cli import compare

    return compare


def _models() -> ModuleType:
    from evalctl.cli import models

    return models


def _server() -> ModuleType:
    from evalctl.cli import server

    return server


def _report() -> ModuleType:
    from evalctl.cli import report

    return report


def _gate() -> ModuleType:
    from evalctl.cli import gate

    return gate


def _merge() -> ModuleType:
    from evalctl.cli import merge

    return merge


def _soak() -> ModuleType:
    from evalctl.cli import soak

    return soak


def _schema() -> ModuleType:
    from evalctl.cli import schema

    return schema


def _crash_test() -> ModuleType:
    from evalctl.cli import crash_test

    return crash_test


def _view() -> ModuleType:
    from evalctl.cli import view

    return view


def _history() -> ModuleType:
    from evalctl.cli import history

    return history


@dataclass(frozen=True)
class CommandEntry:
    load: Callable[[], ModuleType]  # imports the command's module under evalctl.cli
    summary: str  # the first paragraph of the command's help, as `evalctl --help` lists it
    group: bool = False  # a command with subcommands (`evalctl server start`, ...)


# In `evalctl --help` order (Typer lists plain commands first, then groups).
COMMANDS: dict[str, CommandEntry] = {
    "init": CommandEntry(
        _init,
        "Write a starter suite, its fixture, and a reply script that makes it pass.",
    ),
    "run": CommandEntry(_run, "Run golden cases against a provider and write versioned results."),
    "cases": CommandEntry(_cases, "List and validate case suites.", group=True),
    "providers": CommandEntry(
        _providers,
        "List providers, whether each is available, and the reason when it is not.",
    ),
    "embed": CommandEntry(
        _embed, "Embed texts with a provider and show the vectors (several: their cosines)."
    ),
    "plugins": CommandEntry(
        _plugins,
        "List what plugins register, and the plugin each entry comes from.",
    ),
    "baseline": CommandEntry(
        _baseline, "Write the per-provider baseline that `evalctl compare` gates against."
    ),
    "compare": CommandEntry(_compare, "Gate results on a baseline, or diff two runs."),
    "schema": CommandEntry(
        _schema, "Print the JSON Schema of a suite file, for editors that check TOML with one."
    ),
    "models": CommandEntry(_models, "List and verify local GGUF models.", group=True),
    "server": CommandEntry(_server, "Run and manage the local inference daemon.", group=True),
    "report": CommandEntry(
        _report,
        "Render results as one self-contained HTML page and/or as runbook Markdown.",
    ),
    "gate": CommandEntry(
        _gate,
        "Say whether CI's quality job must run (`run=true|false`), and why.",
    ),
    "merge": CommandEntry(
        _merge,
        "Merge the shards of one run (`evalctl run --shard i/n`) into one results file.",
    ),
    "soak": CommandEntry(
        _soak,
        "Soak the local daemon: N requests on one warm daemon, its memory sampled.",
    ),
    "crash-test": CommandEntry(
        _crash_test,
        "SIGKILL the local daemon and prove the client notices and recovers on its own.",
    ),
    "history": CommandEntry(
        _history,
        "The run store: runs, a case's history, flaky cases, changes and trends.",
        group=True,
    ),
    "view": CommandEntry(
        _view,
        "Browse the run store in a browser: runs, cases, trends, flaky cases, diffs.",
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
        entry.load().register(app)


def register(app: typer.Typer, argv: Sequence[str]) -> None:
    """The module of the command in `argv` if there is one, else the help stand-ins."""
    entry = COMMANDS.get(requested(argv) or "")
    if entry is not None:
        entry.load().register(app)
        return
    for name, known in COMMANDS.items():
        if known.group:
            app.add_typer(typer.Typer(), name=name, help=known.summary)
        else:
            app.command(name, help=known.summary)(_listed_only)


def _listed_only() -> None:
    # Never runs: a command named on the command line gets its real module instead.
    raise AssertionError("stand-in command invoked")
