"""Every command's `--help`, rendered at 80 columns as a pipe gets it (not a terminal), reads:
its summary is one sentence on one line, no paragraph is broken mid-sentence, no flag shows a
`<bool>` placeholder, and `run` lists its options in panels.

The commands are found by walking the command tree, so a new command or subcommand is
checked without being named here.

"Broken mid-sentence", precisely: Rich wraps a paragraph greedily, so a line of the
description ends only where the next word would not fit. A line that ends while the next
line's first word would have fitted after it (one space between) was broken by a line break
in the source, not by the width; the one allowed exception is a list item (`- `) starting the
next line.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import typer.main
from rich.cells import cell_len
from rich.text import Text
from typer.testing import CliRunner

from evalctl.cli import app as cli_app
from evalctl.cli import commands
from evalctl.cli.help_format import reflow

WIDTH = 80
# The description is printed with one column of padding each side.
TEXT_WIDTH = WIDTH - 2
RUN_PANELS = (
    "Selection",
    "Provider",
    "Sampling",
    "Gate and baseline",
    "Output and reports",
    "Local daemon",
    "Limits and safety",
)
# Typer's placeholders for a value's Python type, in place of a name for it.
TYPE_PLACEHOLDER = re.compile(r"<(bool|int|float|str|path|text|list\[[^\]]*\])( range)?>", re.I)


@pytest.fixture(scope="module")
def tree() -> Iterator[Any]:
    cli_app.app.registered_commands.clear()
    cli_app.app.registered_groups.clear()
    commands.register_all(cli_app.app)
    yield typer.main.get_command(cli_app.app)
    cli_app.app.registered_commands.clear()
    cli_app.app.registered_groups.clear()


def walk(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from walk(sub, (*path, name))


@functools.cache
def render(path: tuple[str, ...]) -> str:
    # Cached: a help text does not change within the session, and each call builds the tree.
    result = CliRunner().invoke(cli_app.app, [*path, "--help"], env={"COLUMNS": str(WIDTH)})
    assert result.exit_code == 0, (path, result.output)
    return result.output


def description(output: str) -> list[str]:
    """The lines between the usage line and the first panel."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("Usage:"))
    while start < len(lines) and lines[start].strip():
        start += 1  # the usage may wrap
    end = next((i for i, line in enumerate(lines) if line.lstrip().startswith("╭")), len(lines))
    return [line.rstrip() for line in lines[start:end]]


def broken_lines(lines: list[str]) -> list[str]:
    """Each line that ends before the width forced it to, with the line after it."""
    broken = []
    for line, after in itertools.pairwise(lines):
        if not line.strip() or not after.strip() or after.strip().startswith("- "):
            continue
        first_word = after.split()[0]
        if cell_len(line.strip()) + 1 + cell_len(first_word) <= TEXT_WIDTH:
            broken.append(f"{line.strip()!r} / {after.strip()!r}")
    return broken


def test_the_walk_finds_every_command_and_subcommand(tree: Any) -> None:
    names = {" ".join(path) for path, _ in walk(tree)}
    assert {"run", "history", "history list", "view", "server start", "cases validate"} <= names
    assert set(commands.COMMANDS) <= names


def test_every_summary_is_one_sentence_on_one_line(tree: Any) -> None:
    for path, command in walk(tree):
        summary = (command.help or "").split("\n\n")[0]
        where = " ".join(("evalctl", *path))
        assert summary, f"{where} has no help"
        assert "\n" not in summary, f"{where}: {summary!r}"
        assert summary.endswith("."), f"{where}: {summary!r} is not a sentence"
        assert cell_len(summary) <= TEXT_WIDTH, f"{where}: {summary!r} does not fit {WIDTH}"
        if path:
            # As `--help` shows it: whole, on its own line.
            assert f" {summary}" in [line.rstrip() for line in render(path).splitlines()], where


def test_the_root_lists_each_command_by_its_summary(tree: Any) -> None:
    listed = render(())
    for name, entry in commands.COMMANDS.items():
        assert "\n" not in entry.summary
        assert entry.summary == tree.commands[name].help.split("\n\n")[0], name
        assert name in listed


def test_no_help_is_broken_mid_sentence_or_shows_a_type_placeholder(tree: Any) -> None:
    problems = []
    for path, _ in walk(tree):
        where = " ".join(("evalctl", *path))
        output = render(path)
        assert "Usage:" in output
        problems += [f"{where}: {b}" for b in broken_lines(description(output))]
        problems += [f"{where}: {m.group(0)}" for m in TYPE_PLACEHOLDER.finditer(output)]
        problems += [
            f"{where}: wider than {WIDTH}: {line!r}"
            for line in output.splitlines()
            if cell_len(line) > WIDTH
        ]
    assert problems == []


def test_help_is_shown_as_written_never_read_as_markup(tree: Any) -> None:
    # `[history] store` once vanished from --store's help: Rich read it as a style tag.
    for path, command in walk(tree):
        for text in [command.help, *(getattr(p, "help", None) for p in command.params)]:
            if text:
                assert Text.from_markup(text).plain == text.replace("\\[", "["), (path, text)
    output = render(("run",))
    assert "[history]" in output
    assert "[matrix] in evalctl.toml" in output


def test_the_broken_line_rule_catches_a_hard_break_and_spares_wrapping() -> None:
    wrapped = ["x" * 70 + " word", "next words here."]
    assert broken_lines([" " + "x" * 70, " longerword here."]) == []
    assert (
        len(broken_lines([" Exits 0 when every case was scored (`evalctl", " compare` gates)."]))
        == 1
    )
    assert broken_lines([" a list:", " - item one", " - item two"]) == []
    assert broken_lines(wrapped) == []


def test_reflow_joins_paragraph_lines_and_keeps_list_items_and_verbatim_blocks() -> None:
    text = "One two\nthree.\n\nA list:\n- first\n  item\n- second\n\n\b\nkept\nas is"
    assert reflow(text) == "One two three.\n\nA list:\n- first item\n- second\n\n\b\nkept\nas is"


def test_run_lists_its_options_in_panels(tree: Any) -> None:
    output = render(("run",))
    titles = re.findall(r"╭─ (.+?) ─", output)
    assert set(RUN_PANELS) <= set(titles)
    # Only the generic options stay in the default panel.
    options_panel = output.split("╭─ Options ─", 1)[1].split("╰", 1)[0]
    assert re.findall(r"(--[a-z-]+)", options_panel) == ["--json", "--help"]
    unplaced = [
        p.opts[0]
        for p in tree.commands["run"].params
        if getattr(p, "rich_help_panel", None) is None and p.opts[0] != "--json"
    ]
    assert unplaced == []


def test_the_panels_are_drawn_when_the_help_is_piped() -> None:
    # Box-drawing characters need a UTF-8 stream (a C locale would get ASCII boxes).
    env = {**os.environ, "COLUMNS": str(WIDTH), "TERM": "dumb", "PYTHONIOENCODING": "utf-8"}
    env.pop("FORCE_COLOR", None)
    out = subprocess.run(
        [sys.executable, "-m", "evalctl.cli", "run", "--help"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    for title in RUN_PANELS:
        assert f"╭─ {title} ─" in out, title
    assert "<bool>" not in out
