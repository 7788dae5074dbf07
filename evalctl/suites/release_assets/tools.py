"""The release-assets tools: read a case's committed release fixture, and take the recipe.

`fetch_file` and `inspect_archive` let a model look before it commits; `extract_pattern`
is the submission. Unusable arguments raise ToolInputError, whose message goes back to the
model as an error result (a repair turn); an asset that exists but cannot be shown is a
plain answer, since looking at it was a reasonable thing to try.
"""

from __future__ import annotations

import difflib
from typing import Any

from evalctl.chat import ToolDef
from evalctl.errors import BadInputError
from evalctl.suites.release_assets.fixture import ReleaseFixture, load_release
from evalctl.suites.release_assets.recipe import (
    ACTIONS,
    FORMATS,
    archive_format_of,
    parse_recipe,
    resolve,
)
from evalctl.tools.base import Tool, ToolContext, ToolInputError, ToolOutput

MAX_TEXT = 4000  # characters of a fetched file shown to the model: keep small contexts safe

# Bounds on every string argument. A constrained decoder enforces them, so a small model
# cannot spend its whole max_tokens inside one runaway string (a k9s reply once wrote 512
# tokens of "The command is a command to ..." into one mapping value). A looping model
# writes each string up to its bound ("amd64_amd64_amd64_..."), so the bounds are kept
# close to the longest value the perfect replay script needs (in brackets).
MAX_NAME = 100  # an asset name, a repository path or an asset URL [40]
MAX_PATTERN = 64  # asset_pattern [40]
MAX_PATH = 48  # strip_prefix, install_subpath [33]
MAX_COMMAND = 40  # verify [20]
MAX_WORD = 24  # executable, rename, a mapping value such as unknown-linux-musl [18]
# The mapping keys the suite's system prompt names ("Our OS names: ..."): a closed set, so
# the schema lists exactly these. recipe.py still accepts every canonical name.
PROMPTED_OS = ("linux", "darwin", "windows")
PROMPTED_ARCH = ("amd64", "arm64", "386", "arm")


def release_of(ctx: ToolContext) -> ReleaseFixture:
    name = getattr(ctx.case.input, "release", None)
    if not isinstance(name, str):
        # A suite wiring problem, not the model's fault: the case ends in `error`.
        raise BadInputError(
            "release-assets tools need a case input with a `release` fixture name",
            case_id=ctx.case.id,
            field="input.release",
        )
    return load_release(ctx.fixtures_dir, name)


def _name_argument(arguments: dict[str, Any], release: ReleaseFixture) -> str:
    value = arguments.get("name")
    if not isinstance(value, str) or not value.strip():
        raise ToolInputError("name is required: an asset name (or its download URL)")
    name = value.strip()
    for prefix in (release.download_prefix, release.raw_prefix):
        if name.startswith(prefix):
            return name[len(prefix) :]
    if "://" in name:
        raise ToolInputError(
            f"only this release's files can be read; asset URLs look like "
            f"{release.download_prefix}<asset name>"
        )
    return name


def _unknown(name: str, release: ReleaseFixture, candidates: list[str]) -> ToolInputError:
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.4)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    return ToolInputError(f"{release.repo} {release.tag} has no file {name!r}.{hint}")


class FetchFile(Tool):
    # Reads its arguments leniently itself and says what it made of them; its baselines
    # were recorded so (evalctl.tools.base).
    lenient_arguments = True

    definition = ToolDef(
        name="fetch_file",
        description=(
            "Read a small text file of this release: a checksum list or signature from "
            "the assets, or a repository file such as README.md. Archives and binaries "
            "are not shown (use inspect_archive to list an archive)."
        ),
        parameters={
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "maxLength": MAX_NAME,
                    "description": "An asset name, a repository path, or the file's URL.",
                }
            },
            "required": ["name"],
            "additionalProperties": False,
        },
    )

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        release = release_of(ctx)
        name = _name_argument(arguments, release)
        normalized = {"name": name}
        text = release.files.get(name)
        if text is not None:
            shown = text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "\n[... truncated]"
            return ToolOutput(content=shown, normalized_arguments=normalized)
        if name in release.assets:
            fmt = archive_format_of(name)
            what = f"a {fmt} archive; use inspect_archive to list it" if fmt else "binary"
            return ToolOutput(
                content=f"{name} is {what}: no text to show.", normalized_arguments=normalized
            )
        raise _unknown(name, release, [*release.assets, *release.files])


class InspectArchive(Tool):
    # Reads its arguments leniently itself and says what it made of them; its baselines
    # were recorded so (evalctl.tools.base).
    lenient_arguments = True

    definition = ToolDef(
        name="inspect_archive",
        description=(
            "List the files inside one archive asset of this release (.tar.gz, .tgz, "
            ".tar.xz, .tbz, .zip, ...), to find the executable's path."
        ),
        parameters={
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "maxLength": MAX_NAME,
                    "description": "The archive's asset name.",
                }
            },
            "required": ["name"],
            "additionalProperties": False,
        },
    )

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        release = release_of(ctx)
        name = _name_argument(arguments, release)
        if name not in release.assets:
            raise _unknown(name, release, release.assets)
        fmt = archive_format_of(name)
        if fmt is None:
            raise ToolInputError(f"{name} is not an archive; it is installed as it is")
        listing = release.archives.get(name)
        normalized = {"name": name}
        if listing is None:
            return ToolOutput(
                content=f"{name}: no listing is available for this archive.",
                normalized_arguments=normalized,
            )
        header = f"{name} ({fmt}, {len(listing)} entries):"
        return ToolOutput(
            content="\n".join([header, *listing]),
            normalized_arguments=normalized,
            data={"members": len(listing)},
        )


def _mapping_schema(keys: tuple[str, ...], what: str) -> dict[str, Any]:
    # The keys are a closed set (our canonical names), so each is a property and nothing
    # else is allowed; every value is a short string.
    spelling = {"type": "string", "minLength": 1, "maxLength": MAX_WORD}
    return {
        "type": "object",
        "description": (
            f"Our canonical {what} name -> its spelling in the asset names. Keys are the "
            f"platforms the recipe supports; list identity entries too. Keys: {', '.join(keys)}."
        ),
        "properties": {key: dict(spelling) for key in keys},
        "additionalProperties": False,
    }


class ExtractPattern(Tool):
    # Reads its arguments leniently itself and says what it made of them; its baselines
    # were recorded so (evalctl.tools.base).
    lenient_arguments = True

    definition = ToolDef(
        name="extract_pattern",
        description=(
            "Submit the install recipe. It is checked against the release: an error "
            "says what to fix; a success records the recipe and ends the task."
        ),
        parameters={
            "type": "object",
            "properties": {
                "action": {
                    "type": "string",
                    "enum": list(ACTIONS),
                    "description": "github_archive: extract an archive; "
                    "github_file: the asset is the executable itself.",
                },
                "asset_pattern": {
                    "type": "string",
                    "maxLength": MAX_PATTERN,
                    "description": "The asset file name with placeholders {version} (tag "
                    "without a leading v), {tag}, {os}, {arch}, e.g. "
                    "tool_{version}_{os}_{arch}.tar.gz.",
                },
                "format": {
                    "type": "string",
                    "enum": list(FORMATS),
                    "description": "Archive format; binary for github_file.",
                },
                "os_mapping": _mapping_schema(PROMPTED_OS, "OS"),
                "arch_mapping": _mapping_schema(PROMPTED_ARCH, "architecture"),
                "executable": {
                    "type": "string",
                    "maxLength": MAX_WORD,
                    "description": "The command name users run once installed.",
                },
                "verify": {
                    "type": "string",
                    "maxLength": MAX_COMMAND,
                    "description": "A command proving the install, e.g. 'tool --version'.",
                },
                "strip_prefix": {
                    "type": "string",
                    "maxLength": MAX_PATH,
                    "description": "Top-level directory every archive member sits in, "
                    "removed on extraction (placeholders allowed), e.g. tool-{version}/.",
                },
                "install_subpath": {
                    "type": "string",
                    "maxLength": MAX_PATH,
                    "description": "Path of the executable inside the archive after "
                    "strip_prefix, when it is not just the executable name, e.g. bin/tool.",
                },
                "rename": {
                    "type": "string",
                    "maxLength": MAX_WORD,
                    "description": "Install the file under this name when the shipped "
                    "file name differs from executable.",
                },
            },
            "required": [
                "action",
                "asset_pattern",
                "format",
                "os_mapping",
                "arch_mapping",
                "executable",
                "verify",
            ],
            "additionalProperties": False,
        },
    )

    def run(self, arguments: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        recipe = parse_recipe(arguments)
        release = release_of(ctx)
        targets = resolve(recipe, release)
        lines = [
            f"Recipe recorded: {recipe.executable} from {release.repo} {release.tag} "
            f"on {len(targets)} platform(s):"
        ]
        for t in targets:
            inside = f" (member {t.member})" if t.member else ""
            lines.append(f"  {t.platform}: {t.asset}{inside} -> {t.installed_as}")
        normalized = recipe.model_dump(exclude_none=True)
        return ToolOutput(
            content="\n".join(lines),
            normalized_arguments=normalized,
            data={
                "recipe": normalized,
                "release": {"repo": release.repo, "tag": release.tag, "version": release.version},
                "targets": {t.platform: t.as_dict() for t in targets},
            },
        )


FETCH_FILE = FetchFile()
INSPECT_ARCHIVE = InspectArchive()
EXTRACT_PATTERN = ExtractPattern()
