"""`evalctl models list|verify`: the models evalctl knows, and whether a file is intact."""

from __future__ import annotations

from typing import Annotated

import typer
from pydantic import BaseModel
from rich.table import Table

from evalctl.cli import options
from evalctl.cli.output import emit, stdout

models_app = typer.Typer(help="List and verify local GGUF models.", no_args_is_help=True)


class ModelRow(BaseModel):
    name: str
    default: bool
    installed: bool
    path: str | None
    size: int
    sha256: str
    package: str
    description: str


class ModelsListing(BaseModel):
    models: list[ModelRow]


class VerifyReport(BaseModel):
    name: str
    path: str
    size: int
    sha256: str
    # None for a GGUF outside the manifest: there is nothing to compare against.
    expected_sha256: str | None
    # Whether the hash was compared with a manifest entry (and matched: a mismatch exits 2).
    compared: bool
    # True when it matched; None when there was nothing to compare with.
    ok: bool | None
    note: str


def _render_listing(listing: ModelsListing) -> None:
    table = Table()
    for column in ("model", "installed", "size", "sha256", "path"):
        table.add_column(column, overflow="fold")
    for row in listing.models:
        name = row.name + (" (default)" if row.default else "")
        installed = "[green]yes[/]" if row.installed else f"[yellow]no[/] (pip {row.package})"
        size = f"{row.size / 1024 / 1024:.1f} MiB"
        table.add_row(name, installed, size, row.sha256[:12] + "…", row.path or "-")
    stdout.print(table)


def _render_verify(report: VerifyReport) -> None:
    if report.compared:
        stdout.print(f"[green]ok[/] {report.name}: sha256 {report.sha256} (matches the manifest)")
    else:
        stdout.print(f"[yellow]not verified[/] {report.name}: sha256 {report.sha256}")
        stdout.print(f"   {report.note}")
    stdout.print(f"   {report.path} ({report.size} bytes)")


@models_app.command("list")
def list_models(as_json: Annotated[bool, options.JSON] = False) -> None:
    """List the models in the manifest: installed or not, path, size and SHA256."""
    from evalctl.modelfiles.manifest import list_models as listed

    rows = [
        ModelRow(
            name=m.entry.name,
            default=m.is_default,
            installed=m.path is not None,
            path=str(m.path) if m.path else None,
            size=m.entry.size,
            sha256=m.entry.sha256,
            package=m.entry.pip_requirement,
            description=m.entry.description,
        )
        for m in listed()
    ]
    emit(ModelsListing(models=rows), as_json, _render_listing)


@models_app.command("verify")
def verify_model(
    model: Annotated[
        str | None,
        typer.Argument(
            help="Manifest name or GGUF path (default: EVALCTL_LOCAL_MODEL, else the default)."
        ),
    ] = None,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Hash a model file and compare with the manifest; a mismatch exits 2."""
    from evalctl.modelfiles.manifest import resolve, verify

    resolved = resolve(model or options.settings_from_env().local_model)
    sha = verify(resolved)  # raises BadInputError (exit 2) on a mismatch
    report = VerifyReport(
        name=resolved.name,
        path=str(resolved.path),
        size=resolved.path.stat().st_size,
        sha256=sha,
        expected_sha256=resolved.expected_sha256,
        compared=resolved.expected_sha256 is not None,
        ok=True if resolved.expected_sha256 is not None else None,
        note=(
            "matches the manifest"
            if resolved.expected_sha256 is not None
            else "not in the manifest: there is nothing to compare this hash with (runs on "
            "this file record it as the model's sha256)"
        ),
    )
    emit(report, as_json, _render_verify)


def register(app: typer.Typer) -> None:
    app.add_typer(models_app, name="models")
