"""Help that reads at any width: every command's `--help` goes through `TidyGroup`.

Typer's Rich help keeps each line break of a docstring paragraph, so a docstring wrapped at
the source's 100 columns came out broken mid-sentence at 80 (a line, then a lone word, then a
line). Click's own formatter rewraps paragraphs and keeps only those marked `\\b`; this does the
same for the Rich help, once, when the command tree is built: each paragraph's lines are
joined (Rich then wraps them at the terminal's width), a `\\b` paragraph is kept line by line,
and a line starting `- ` starts a list item. A flag (`--json`, `--store/--no-store`) takes no
value, so it shows no `<bool>` placeholder, and an option's value is named, not typed.

Imports typer (click) only: `evalctl --help` must stay light (tests/test_cli_startup.py).
"""

from __future__ import annotations

import copy
from typing import Any

import typer.core
from rich.markup import escape
from typer.models import OptionInfo


def reflow(text: str) -> str:
    """`text` with each paragraph on one line, except `\\b` paragraphs and `- ` list items."""
    paragraphs = []
    for paragraph in text.split("\n\n"):
        if paragraph.lstrip("\n").startswith("\b"):
            paragraphs.append(paragraph)
            continue
        lines: list[str] = []
        for line in paragraph.splitlines():
            stripped = line.strip()
            if not stripped:
                continue
            if lines and not stripped.startswith("- "):
                lines[-1] += " " + stripped
            else:
                lines.append(stripped)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def plain(text: str) -> str:
    """`text` shown as written: help is prose, never Rich markup, so `[history] store` and
    `[[suite.mcp]]` are not read as style tags and dropped (a `\\[` written to escape one
    stays a `[`)."""
    return escape(text.replace("\\[", "["))


def tidy(command: Any) -> None:
    """Reflow `command`'s help and its subcommands', and drop flags' value placeholders.

    `command` is a command of the click that Typer bundles (`typer._click`, private: hence
    `Any` and the Typer classes in the checks)."""
    if command.help:
        command.help = plain(reflow(command.help))
    for param in command.params:
        if getattr(param, "help", None):
            param.help = plain(param.help)
        _name_value(param)
    help_option = command.get_help_option

    def named_help_option(ctx: Any) -> Any:
        # Made when help is first asked for, so tidied then.
        option = help_option(ctx)
        if option is not None:
            _name_value(option)
        return option

    command.get_help_option = named_help_option
    if isinstance(command, typer.core.TyperGroup):
        for sub in command.commands.values():
            tidy(sub)


def _name_value(param: Any) -> None:
    """A flag shows no placeholder; an option's value is named after it (`--out OUT`) where
    Typer would show its Python type (`<path>`, `<list[str]>`): shorter, and what a reader
    types. An argument is named already (`RESULTS`): its type is not shown beside it."""
    if isinstance(param, typer.core.TyperArgument):
        param.display_type_rich = _no_type  # type: ignore[method-assign]
    if not isinstance(param, typer.core.TyperOption) or param.metavar is not None:
        return
    param.metavar = "" if param.is_flag else (param.name or "value").upper()


def _no_type(ctx: Any) -> None:
    return None


class TidyGroup(typer.core.TyperGroup):
    """The root `evalctl` group: Typer builds every subcommand before it, so it tidies the
    whole tree once."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        tidy(self)


def in_panel(option: OptionInfo, panel: str) -> OptionInfo:
    """A copy of a shared option (`options.SUITE`) listed under `panel` in one command's help:
    the other commands that share it keep their own panels."""
    placed = copy.copy(option)
    placed.rich_help_panel = panel
    return placed
