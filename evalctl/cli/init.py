"""`evalctl init`: write a starter suite (an `assert` suite with a fixture-backed tool, its
fixture and a reply script) so a scripted run is green from the first minute."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel
from rich.markup import escape

from evalctl.cli import options
from evalctl.cli.output import emit, stdout
from evalctl.errors import BadInputError
from evalctl.userfiles import environment_error

# Packaged template -> where it goes under the target directory.
FILES = {
    "starter.toml": "cases/starter.toml",
    "fixtures/opening_hours.json": "cases/fixtures/opening_hours.json",
    "scripts/starter.toml": "cases/scripts/starter.toml",
}
SCRIPT = FILES["scripts/starter.toml"]


class InitOutput(BaseModel):
    directory: str
    files: list[str]
    # Commands to try next, to be run from `directory`.
    next: list[str]


def _render(out: InitOutput) -> None:
    stdout.print(f"wrote a starter suite in {escape(out.directory)}:")
    for path in out.files:
        stdout.print(f"  {escape(path)}")
    stdout.print("next, from that directory:")
    for command in out.next:
        stdout.print(f"  {escape(command)}")


def write_starter(directory: Path, *, force: bool) -> list[str]:
    """Write the starter files; refuse to overwrite any unless `force`."""
    targets = {src: directory / dest for src, dest in FILES.items()}
    if not force:
        existing = [str(p) for p in targets.values() if p.exists()]
        if existing:
            # The error names the file (the first one; the message lists any others), so
            # `file` in --json points at what would be lost.
            others = f" (and {', '.join(existing[1:])})" if len(existing) > 1 else ""
            raise BadInputError(
                f"already exists; init would overwrite it{others}",
                file=existing[0],
                hint="pick another directory, or pass --force to overwrite",
            )
    templates = resources.files("evalctl.cli") / "starter"
    for src, target in targets.items():
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text((templates / src).read_text(encoding="utf-8"), encoding="utf-8")
        except OSError as exc:
            infra = environment_error(exc, "write", target)
            if infra is not None:
                raise infra from None
            raise BadInputError(f"cannot write: {exc.strerror or exc}", file=str(target)) from None
    return list(FILES.values())


def init(
    directory: Annotated[
        Path, typer.Argument(help="Where to write cases/ (default: the current directory).")
    ] = Path("."),
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite starter files already there.")
    ] = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Write a starter suite, its fixture, and a reply script that makes it pass.

    The suite is cases/starter.toml, an `assert` suite with a fixture-backed tool; the reply
    script makes a scripted run of it pass."""
    files = write_starter(directory, force=force)
    out = InitOutput(
        directory=str(directory),
        files=files,
        next=[
            "evalctl cases validate",
            f"evalctl run --provider scripted --script {SCRIPT}",
            "evalctl run --provider local",
            f"evalctl baseline --provider scripted --script {SCRIPT}",
        ],
    )
    emit(out, as_json, _render)


def register(app: typer.Typer) -> None:
    app.command("init")(init)
