"""Committed release fixtures (`<suite dir>/fixtures/releases/<name>.json`): what a GitHub
release looks like to the release-assets tools, with no network.

A fixture holds the repository, the tag, the asset file names as the release lists them,
archive listings (member paths) for the archives cases inspect, and the text of small files
`fetch_file` can return (checksum lists from the release, or docs from the repository).
"""

from __future__ import annotations

import re
import threading
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from evalctl import userfiles
from evalctl.errors import BadInputError

RELEASES_SUBDIR = "releases"
# Fixture names double as file names: keep them plain.
FIXTURE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ReleaseFixture(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    description: str = ""
    repo: str = Field(pattern=r"^[^/\s]+/[^/\s]+$")
    tag: str = Field(min_length=1)
    assets: list[str] = Field(min_length=1)
    # Asset name -> member paths, as `tar tf` / `unzip -l` would list them.
    archives: dict[str, list[str]] = Field(default_factory=dict)
    # Asset name or repository path -> text content.
    files: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> ReleaseFixture:
        if len(set(self.assets)) != len(self.assets):
            raise ValueError("assets has duplicate names")
        unknown = sorted(set(self.archives) - set(self.assets))
        if unknown:
            raise ValueError(f"archives lists files that are not assets: {unknown}")
        return self

    @property
    def version(self) -> str:
        return version_of(self.tag)

    @property
    def download_prefix(self) -> str:
        return f"https://github.com/{self.repo}/releases/download/{self.tag}/"

    @property
    def raw_prefix(self) -> str:
        return f"https://raw.githubusercontent.com/{self.repo}/{self.tag}/"


def version_of(tag: str) -> str:
    """The tag without a leading `v` (v1.2.3 -> 1.2.3); other tags are used as they are."""
    return tag[1:] if re.match(r"^v\d", tag) else tag


_cache: dict[Path, tuple[float, ReleaseFixture]] = {}
_lock = threading.Lock()


def fixture_path(fixtures_dir: Path, name: str) -> Path:
    return fixtures_dir / RELEASES_SUBDIR / f"{name}.json"


def load_release(fixtures_dir: Path, name: str) -> ReleaseFixture:
    """Load (and cache by mtime: cases of one run share fixtures) a release fixture."""
    if not FIXTURE_NAME.match(name):
        raise BadInputError(f"invalid release fixture name {name!r}", field="input.release")
    path = fixture_path(fixtures_dir, name)
    try:
        mtime = path.stat().st_mtime
    except OSError:
        raise BadInputError(
            "release fixture not found",
            file=str(path),
            hint=f"add {path.name} under {path.parent}",
        ) from None
    with _lock:
        hit = _cache.get(path)
        if hit is not None and hit[0] == mtime:
            return hit[1]
    try:
        fixture = ReleaseFixture.model_validate(userfiles.read_json(path, what="release fixture"))
    except ValidationError as exc:
        err = exc.errors()[0]
        raise BadInputError(
            userfiles.validation_message(err),
            file=str(path),
            field=userfiles.field_path(err["loc"]) or None,
        ) from None
    with _lock:
        _cache[path] = (mtime, fixture)
    return fixture
