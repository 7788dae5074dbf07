"""The index of a matrix run (`matrix.json`): its cells, each a provider, a model and a prompt
variant, and where each cell's results are.

A matrix run's directory holds one run directory per cell (`<cell-id>/results.json`, an
ordinary run) beside this index; `compare`, `baseline --from` and the matrix report read the
cells through it rather than guessing from directory names.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from evalctl import userfiles
from evalctl.errors import BadInputError
from evalctl.results.io import write_json_atomic
from evalctl.results.versions import MATRIX_VERSION
from evalctl.userpaths import SAFE_NAME, SAFE_NAME_WORDS

MATRIX_FILE = "matrix.json"
# What a cell id may hold: a file name on every platform, and a baseline file's stem.
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


# The longest cell id: it names a directory and a baseline file (`<id>.json`), and a file
# name holds at most 255 bytes; far below that, so the id still reads in a table.
MAX_CELL_ID = 96


def cell_id(provider: str, model: str | None, prompt: str | None) -> str:
    """`<provider>[-<model>][-<prompt>]`, each part made filesystem-safe: a model such as
    `meta-llama/Llama-3` or a GGUF path becomes `meta-llama_Llama-3`. An id longer than
    MAX_CELL_ID keeps its start and ends with a hash of the whole, so two long model names
    that share a start stay two cells."""
    parts = [provider, *(p for p in (model, prompt) if p)]
    full = "-".join(_UNSAFE.sub("_", p).strip("_.") or "_" for p in parts)
    if len(full) <= MAX_CELL_ID:
        return full
    digest = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{full[: MAX_CELL_ID - 13].rstrip('_.-')}-{digest}"


class MatrixCell(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # The cell's directory and its baseline's file name (`<id>.json`): a matrix directory is
    # often a downloaded CI artifact, so an id that is a path (`../../x`, `/etc/x`) is refused.
    id: str
    provider: str
    # As given (`--model`, `[matrix] models`); None: the provider's default model.
    model: str | None = None
    # The prompt variant's name and template (`[matrix] prompts`); None: the case prompt as is.
    prompt: str | None = None
    prompt_template: str | None = None
    # The cell's results file, relative to the matrix directory; None when it did not run.
    results: str | None = None
    skip_reason: str | None = None

    @field_validator("id")
    @classmethod
    def _file_name(cls, value: str) -> str:
        if not SAFE_NAME.fullmatch(value):
            raise ValueError(f"{value!r} cannot be a cell id: it must be {SAFE_NAME_WORDS}")
        return value


class MatrixIndex(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["matrix"] = "matrix"
    schema_version: Literal[1] = MATRIX_VERSION
    run_id: str
    started_at: str
    finished_at: str | None = None
    cells: list[MatrixCell]

    def ran(self) -> list[MatrixCell]:
        return [c for c in self.cells if c.results is not None]


def is_matrix_dir(path: Path) -> bool:
    return path.is_dir() and (path / MATRIX_FILE).is_file()


def write_matrix(index: MatrixIndex, directory: Path) -> Path:
    path = directory / MATRIX_FILE
    write_json_atomic(path, index)
    return path


def read_matrix(directory: Path) -> MatrixIndex:
    """The index in `directory` (or the index file itself); errors name the file and field."""
    path = directory if directory.name == MATRIX_FILE else directory / MATRIX_FILE
    data = userfiles.read_json(path, what="matrix index")
    try:
        return MatrixIndex.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise BadInputError(
            userfiles.validation_message(err),
            file=str(path),
            field=userfiles.field_path(err["loc"]),
        ) from None


def cell_results_path(directory: Path, cell: MatrixCell) -> Path:
    """Where `cell`'s results are; a path that leaves the matrix directory is refused, so a
    hand-edited index cannot point a gate at another run's files."""
    assert cell.results is not None
    path = (directory / cell.results).resolve()
    if directory.resolve() not in path.parents:
        raise BadInputError(
            "a cell's results must lie inside the matrix directory",
            file=str(directory / MATRIX_FILE),
            field=f"cells.{cell.id}.results",
        )
    return directory / cell.results
