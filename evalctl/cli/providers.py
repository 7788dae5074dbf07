"""`evalctl providers`: which providers can run here, why not, and where each came from
(built in, or the plugin that registered it)."""

from __future__ import annotations

from typing import Annotated

import typer
from pydantic import BaseModel
from rich.markup import escape
from rich.table import Table

from evalctl.cli import options
from evalctl.cli.output import emit, stdout
from evalctl.providers.options import ProviderOptions
from evalctl.providers.registry import availability, detect


class ProviderRow(BaseModel):
    name: str
    available: bool
    reason: str
    summary: str
    # `builtin`, or the plugin that registered it: `orders_plugin (evalctl.toml)`.
    origin: str = "builtin"
    # How it runs here, where known: the local engine's backend and GPU layers.
    detail: str = ""


class ProvidersReport(BaseModel):
    default: str
    providers: list[ProviderRow]


def _render(report: ProvidersReport) -> None:
    table = Table()
    for column in ("provider", "status", "origin", "detail"):
        table.add_column(column, overflow="fold")
    for row in report.providers:
        status = "[green]available[/]" if row.available else "[yellow]unavailable[/]"
        mark = " (default)" if row.name == report.default else ""
        detail = row.summary if row.available else row.reason
        if row.available and row.detail:
            detail = f"{row.summary}\n{row.detail}"
        table.add_row(escape(row.name) + mark, status, escape(row.origin), escape(detail))
    stdout.print(table)


def providers(as_json: Annotated[bool, options.JSON] = False) -> None:
    """List providers, whether each is available, and the reason when it is not.

    Each row names its origin: built in, or the plugin that registered it (docs/plugins.md).
    The local engine's row adds its backend and GPU layers (docs/hardware.md).
    """
    opts = ProviderOptions(settings=options.settings_from_env(), env=options.environ())
    report = ProvidersReport(
        default=detect(opts),
        providers=[
            ProviderRow(
                name=a.name,
                available=a.available,
                reason=a.reason,
                summary=a.summary,
                origin=a.origin,
                detail=a.detail,
            )
            for a in availability(opts)
        ],
    )
    emit(report, as_json, _render)


def register(app: typer.Typer) -> None:
    app.command("providers")(providers)
