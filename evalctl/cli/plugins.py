"""`evalctl plugins`: what the plugins loaded here register, and where each thing came from."""

from __future__ import annotations

from typing import Annotated

import typer
from pydantic import BaseModel
from rich.table import Table

from evalctl.cli import options
from evalctl.cli.output import emit, stdout


class PluginRow(BaseModel):
    plugin: str  # the module, or the distribution that declared the entry point
    source: str  # "builtin", "entry point" or "evalctl.toml"
    target: str  # what was loaded: "module" or "module:callable"


class ExtensionRow(BaseModel):
    type: str  # kind, tool, check, resource, setting, provider
    name: str
    plugin: str
    source: str


class PluginsReport(BaseModel):
    plugins: list[PluginRow]
    extensions: list[ExtensionRow]


def _render(report: PluginsReport) -> None:
    table = Table()
    for column in ("type", "name", "plugin", "from"):
        table.add_column(column, overflow="fold")
    for row in report.extensions:
        table.add_row(row.type, row.name, row.plugin, row.source)
    stdout.print(table)
    loaded = ", ".join(f"{p.plugin} ({p.source})" for p in report.plugins)
    stdout.print(f"{len(report.plugins)} plugins loaded: {loaded}")


def plugins(as_json: Annotated[bool, options.JSON] = False) -> None:
    """List what plugins register, and the plugin each entry comes from.

    Kinds, tools, checks, resources and settings, each with its plugin: built-in, an entry
    point or evalctl.toml."""
    from evalctl.plugin_loader import loaded_plugins, registry

    options.settings_from_env()  # takes the plugins evalctl.toml names
    report = PluginsReport(
        plugins=[
            PluginRow(plugin=p.origin.plugin, source=p.origin.source, target=p.target)
            for p in loaded_plugins()
        ],
        extensions=[
            ExtensionRow(type=e.type, name=e.name, plugin=e.origin.plugin, source=e.origin.source)
            for e in registry().entries()
        ],
    )
    emit(report, as_json, _render)


def register(app: typer.Typer) -> None:
    app.command("plugins")(plugins)
