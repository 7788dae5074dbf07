"""`evalctl schema`: the JSON Schema of a suite file, from the models the loader validates
with, for editors (docs/writing-suites.md, "Checking suite files in your editor").
The copy committed at schema/suite.schema.json is this command's output
(tests/test_suite_schema.py fails when it is stale)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel

from evalctl.cli import options
from evalctl.cli.output import emit, stdout
from evalctl.errors import BadInputError

# The committed copy, relative to the repository's root.
COMMITTED = Path("schema/suite.schema.json")
# How the committed copy is refreshed, for the test that finds it stale.
REFRESH = "`make schema` (that is, `evalctl schema --out schema/suite.schema.json`)"


class SchemaWritten(BaseModel):
    out: str  # the file written
    bytes: int


def suite_schema_text() -> str:
    """The schema as it is written and printed: two-space JSON, a trailing newline."""
    from evalctl.cases.schema import suite_file_schema

    return json.dumps(suite_file_schema(), indent=2, ensure_ascii=False) + "\n"


def _render(written: SchemaWritten) -> None:
    stdout.print(f"wrote {written.out} ({written.bytes} bytes)", markup=False, soft_wrap=True)


def schema(
    out: Annotated[
        Path | None,
        typer.Option("--out", metavar="PATH", help="Write the schema to PATH, not stdout."),
    ] = None,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Print the JSON Schema of a suite file, for editors that check TOML with one.

    It is generated from the models `evalctl cases validate` checks a suite with; the
    kind's `input`/`expected` and each assertion's parameters are checked by validate only.
    With --out, write it to PATH (its folder is created); `--json` then reports the file.
    """
    from evalctl.results.io import write_text_atomic
    from evalctl.userfiles import environment_error

    text = suite_schema_text()
    if out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a full disk, or a file where a folder should be
        raise environment_error(exc, "create the folder of", out) or BadInputError(
            f"cannot create its folder: {exc.strerror or exc}", file=str(out)
        ) from None
    write_text_atomic(out, text)
    written = SchemaWritten(out=str(out), bytes=len(text.encode("utf-8")))
    emit(written, as_json, _render)


def register(app: typer.Typer) -> None:
    app.command("schema")(schema)
