"""Install recipes: what `extract_pattern` accepts, normalised, and dry-run against a release.

A recipe names one asset per platform through `asset_pattern`, whose placeholders are
`{version}` (the tag without a leading v), `{tag}`, `{os}` and `{arch}`. `{os}`/`{arch}`
are filled from `os_mapping`/`arch_mapping`: our canonical name (linux, darwin, amd64,
arm64, ...) -> the spelling in the asset names. The mapping keys are the platforms the
recipe supports, so identity entries (linux -> linux) are listed too.

The dry run is what a real installer would find out on first use: an asset that does not
exist, an executable that is not in the archive, a file installed under the wrong name.
Problems come back as one message listing them all, so a model can fix them in one turn.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import posixpath
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from evalctl.suites.release_assets.fixture import ReleaseFixture, version_of
from evalctl.tools.base import ToolInputError

Action = Literal["github_archive", "github_file"]
ACTIONS: tuple[str, ...] = ("github_archive", "github_file")

CANONICAL_OS: tuple[str, ...] = (
    "linux",
    "darwin",
    "windows",
    "freebsd",
    "openbsd",
    "netbsd",
    "illumos",
    "android",
)
CANONICAL_ARCH: tuple[str, ...] = (
    "amd64",
    "arm64",
    "386",
    "arm",
    "ppc64le",
    "s390x",
    "riscv64",
    "mips64",
    "loong64",
)

# Archive format -> file extensions that carry it (longest first matters for detection).
ARCHIVE_EXTENSIONS: dict[str, tuple[str, ...]] = {
    "tar.gz": (".tar.gz", ".tgz"),
    "tar.xz": (".tar.xz", ".txz"),
    "tar.bz2": (".tar.bz2", ".tbz2", ".tbz"),
    "tar.zst": (".tar.zst", ".tzst"),
    "zip": (".zip",),
    "tar": (".tar",),
}
FORMATS: tuple[str, ...] = (*ARCHIVE_EXTENSIONS, "binary")
FORMAT_ALIASES = {
    "tgz": "tar.gz",
    "txz": "tar.xz",
    "tbz": "tar.bz2",
    "tbz2": "tar.bz2",
    "tzst": "tar.zst",
    "file": "binary",
    "raw": "binary",
}
# Assets that are never the program itself, whatever the pattern says.
NOT_A_PROGRAM = (
    ".sig",
    ".pem",
    ".asc",
    ".sha256",
    ".sha512",
    ".txt",
    ".json",
    ".jsonl",
    ".sbom",
    ".deb",
    ".rpm",
    ".apk",
    ".msi",
    ".dmg",
    ".pkg",
    ".zsync",
)
PLACEHOLDERS = ("version", "tag", "os", "arch")
PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
FIELDS = (
    "action",
    "asset_pattern",
    "format",
    "os_mapping",
    "arch_mapping",
    "executable",
    "verify",
    "strip_prefix",
    "install_subpath",
    "rename",
)


class Recipe(BaseModel):
    """A normalised recipe; built only by `parse_recipe`, which reports every problem."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Action
    asset_pattern: str
    format: str
    os_mapping: dict[str, str]
    arch_mapping: dict[str, str]
    executable: str
    verify: str
    strip_prefix: str | None = None
    install_subpath: str | None = None
    rename: str | None = None


@dataclass(frozen=True)
class Target:
    """What the recipe installs on one platform."""

    platform: str  # "linux/amd64"
    asset: str
    strip_prefix: str | None  # resolved for this platform
    member: str | None  # archive member holding the executable; None for github_file
    installed_as: str

    def as_dict(self) -> dict[str, str]:
        out = {"asset": self.asset, "installed_as": self.installed_as}
        if self.strip_prefix is not None:
            out["strip_prefix"] = self.strip_prefix
        if self.member is not None:
            out["member"] = self.member
        return out


def archive_format_of(name: str) -> str | None:
    lower = name.lower()
    for fmt, exts in ARCHIVE_EXTENSIONS.items():
        if lower.endswith(exts):
            return fmt
    return None


def normalize_format(value: str) -> str:
    fmt = value.strip().lower().lstrip(".")
    return FORMAT_ALIASES.get(fmt, fmt)


def normalize_prefix(value: str | None) -> str | None:
    """`./age` and `age/` both mean the directory `age/`; empty means none."""
    if value is None:
        return None
    text = value.strip().removeprefix("./").strip("/")
    return f"{text}/" if text else None


def normalize_subpath(value: str | None) -> str | None:
    if value is None:
        return None
    text = value.strip().removeprefix("./").strip("/")
    return text or None


def expand(template: str, tag: str, os_value: str = "", arch_value: str = "") -> str:
    """Fill the placeholders; plain replacement, so a stray brace cannot raise."""
    return (
        template.replace("{version}", version_of(tag))
        .replace("{tag}", tag)
        .replace("{os}", os_value)
        .replace("{arch}", arch_value)
    )


def _text(args: dict[str, Any], key: str, problems: list[str], *, required: bool) -> str | None:
    value = args.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            problems.append(f"{key} is required")
        return None
    if not isinstance(value, str):
        problems.append(f"{key} must be a string, got {type(value).__name__}")
        return None
    return value.strip()


def _mapping(
    args: dict[str, Any], key: str, known: tuple[str, ...], problems: list[str]
) -> dict[str, str]:
    value = args.get(key)
    if value is None:
        return {}
    if isinstance(value, str):
        # Some models send nested objects as JSON text; read it rather than bounce it.
        with contextlib.suppress(json.JSONDecodeError):
            value = json.loads(value)
    if not isinstance(value, dict):
        problems.append(f'{key} must be an object such as {{"{known[0]}": "..."}}')
        return {}
    out: dict[str, str] = {}
    for raw_key, raw_value in value.items():
        canonical = str(raw_key).strip().lower()
        if canonical not in known:
            problems.append(
                f"{key}: {raw_key!r} is not one of our names ({', '.join(known)}); keys are "
                "our names, values are the spelling in the asset names"
            )
            continue
        if not isinstance(raw_value, str) or not raw_value.strip():
            problems.append(f"{key}[{canonical!r}] must be a non-empty string")
            continue
        out[canonical] = raw_value.strip()
    return out


def parse_recipe(arguments: dict[str, Any]) -> Recipe:
    """Normalise the arguments of an extract_pattern call, or raise listing every problem."""
    problems: list[str] = []
    unknown = sorted(set(arguments) - set(FIELDS))
    if unknown:
        problems.append(f"unknown field(s) {', '.join(unknown)}; fields are {', '.join(FIELDS)}")
    action = _text(arguments, "action", problems, required=True)
    if action is not None and action not in ACTIONS:
        problems.append(f"action must be one of {', '.join(ACTIONS)}, got {action!r}")
        action = None
    pattern = _text(arguments, "asset_pattern", problems, required=True)
    raw_format = _text(arguments, "format", problems, required=action == "github_archive")
    fmt = normalize_format(raw_format) if raw_format else ("binary" if action else None)
    os_mapping = _mapping(arguments, "os_mapping", CANONICAL_OS, problems)
    arch_mapping = _mapping(arguments, "arch_mapping", CANONICAL_ARCH, problems)
    executable = _text(arguments, "executable", problems, required=True)
    verify = _text(arguments, "verify", problems, required=True)
    strip_prefix = normalize_prefix(_text(arguments, "strip_prefix", problems, required=False))
    subpath = normalize_subpath(_text(arguments, "install_subpath", problems, required=False))
    rename = _text(arguments, "rename", problems, required=False)

    if fmt is not None and fmt not in FORMATS:
        problems.append(f"format must be one of {', '.join(FORMATS)}, got {raw_format!r}")
    if action == "github_file":
        if fmt not in (None, "binary"):
            problems.append("a github_file recipe downloads a bare executable: format is binary")
        if strip_prefix or subpath:
            problems.append("strip_prefix and install_subpath apply to archives (github_archive)")
    elif action == "github_archive" and fmt == "binary":
        problems.append("github_archive needs an archive format; use github_file for binaries")
    if pattern is not None:
        _check_pattern(pattern, action, fmt, os_mapping, arch_mapping, problems)
    if executable is not None and (("/" in executable) or any(c.isspace() for c in executable)):
        problems.append(
            "executable is the command name (no path, no spaces); put the path inside the "
            "archive in install_subpath"
        )
    if rename is not None and "/" in rename:
        problems.append("rename is a file name, not a path")
    if verify is not None and executable is not None and verify.split()[0] != executable:
        problems.append(f"verify must run the executable, e.g. '{executable} --version'")
    if problems:
        raise ToolInputError("recipe rejected:\n- " + "\n- ".join(problems))
    assert action is not None and pattern is not None and fmt is not None
    assert executable is not None and verify is not None
    return Recipe(
        action=action,
        asset_pattern=pattern,
        format=fmt,
        os_mapping=os_mapping,
        arch_mapping=arch_mapping,
        executable=executable,
        verify=verify,
        strip_prefix=strip_prefix,
        install_subpath=subpath,
        rename=rename,
    )


def _check_pattern(
    pattern: str,
    action: str | None,
    fmt: str | None,
    os_mapping: dict[str, str],
    arch_mapping: dict[str, str],
    problems: list[str],
) -> None:
    if "/" in pattern:
        problems.append("asset_pattern is an asset file name, not a URL or path")
    used = PLACEHOLDER.findall(pattern)
    for name in sorted(set(used) - set(PLACEHOLDERS)):
        problems.append(
            f"asset_pattern: unknown placeholder {{{name}}}; use "
            + ", ".join(f"{{{p}}}" for p in PLACEHOLDERS)
        )
    for placeholder, mapping, key in (
        ("os", os_mapping, "os_mapping"),
        ("arch", arch_mapping, "arch_mapping"),
    ):
        if placeholder in used and not mapping:
            problems.append(f"asset_pattern uses {{{placeholder}}} but {key} is empty")
        if mapping and placeholder not in used:
            problems.append(f"{key} is set but asset_pattern has no {{{placeholder}}}")
    found = archive_format_of(pattern)
    if action == "github_archive" and fmt in ARCHIVE_EXTENSIONS and found != fmt:
        ends = f"ends in {found}" if found else "has no archive extension"
        problems.append(f"format is {fmt} but asset_pattern {ends}")
    if action == "github_file" and found is not None:
        problems.append(f"asset_pattern names a {found} archive: use action github_archive")


def _installed_name(path: str, windows: bool) -> str:
    name = posixpath.basename(path)
    return name[: -len(".exe")] if windows and name.endswith(".exe") else name


def resolve(recipe: Recipe, release: ReleaseFixture) -> list[Target]:
    """Dry-run the recipe on every mapped platform; raise listing what would go wrong."""
    assets = set(release.assets)
    oses = list(recipe.os_mapping.items()) or [("any", "")]
    arches = list(recipe.arch_mapping.items()) or [("any", "")]
    tried: dict[tuple[str, str], str] = {}
    for os_key, os_value in oses:
        for arch_key, arch_value in arches:
            tried[(os_key, arch_key)] = expand(
                recipe.asset_pattern, release.tag, os_value, arch_value
            )
    hits = {plat: name for plat, name in tried.items() if name in assets}
    if not hits:
        sample = list(dict.fromkeys(tried.values()))[:4]
        close = difflib.get_close_matches(sample[0], release.assets, n=4, cutoff=0.3)
        raise ToolInputError(
            f"recipe rejected: asset_pattern with these mappings matches no asset of "
            f"{release.repo} {release.tag}. It gives: {', '.join(sample)}."
            + (f" Similar assets: {', '.join(close)}." if close else "")
        )
    problems = _mapping_problems(recipe, tried, hits)
    targets: list[Target] = []
    for (os_key, arch_key), asset in hits.items():
        target, problem = _target(recipe, release, os_key, arch_key, asset)
        if problem is not None and problem not in problems:
            problems.append(problem)
        targets.append(target)
    if problems:
        raise ToolInputError("recipe rejected:\n- " + "\n- ".join(problems[:6]))
    return targets


def _mapping_problems(
    recipe: Recipe, tried: dict[tuple[str, str], str], hits: dict[tuple[str, str], str]
) -> list[str]:
    problems = []
    for index, (key, mapping) in enumerate(
        (("os_mapping", recipe.os_mapping), ("arch_mapping", recipe.arch_mapping))
    ):
        for canonical, spelling in mapping.items():
            if not any(plat[index] == canonical for plat in hits):
                example = next(name for plat, name in tried.items() if plat[index] == canonical)
                problems.append(
                    f"{key}: {canonical} -> {spelling!r} matches no asset (e.g. {example!r}); "
                    "fix the spelling or drop the entry if the release has no such build"
                )
    return problems


def _target(
    recipe: Recipe, release: ReleaseFixture, os_key: str, arch_key: str, asset: str
) -> tuple[Target, str | None]:
    os_value = recipe.os_mapping.get(os_key, "")
    arch_value = recipe.arch_mapping.get(arch_key, "")
    windows = os_key == "windows"
    lower = asset.lower()
    problem: str | None = None
    if recipe.action == "github_file":
        if lower.endswith(NOT_A_PROGRAM):
            problem = f"{asset} is not a program (a signature, checksum, package or document)"
        installed = recipe.rename or _installed_name(asset, windows)
        member = None
        prefix = None
    else:
        prefix = normalize_prefix(
            expand(recipe.strip_prefix, release.tag, os_value, arch_value)
            if recipe.strip_prefix
            else None
        )
        inner = recipe.install_subpath or recipe.executable
        member = (prefix or "") + expand(inner, release.tag, os_value, arch_value)
        listing = release.archives.get(asset)
        if listing is not None:
            if windows and member not in listing and f"{member}.exe" in listing:
                member += ".exe"
            if prefix and not any(m.startswith(prefix) for m in listing):
                problem = f"strip_prefix {prefix!r} is not a directory in {asset}"
            elif member not in listing:
                shown = ", ".join(listing[:12]) + (", ..." if len(listing) > 12 else "")
                problem = f"{asset} has no member {member!r}; it contains: {shown}"
        installed = recipe.rename or _installed_name(member, windows)
    if problem is None and installed != recipe.executable:
        problem = (
            f"the file would be installed as {installed!r} but executable is "
            f"{recipe.executable!r}: set rename to {recipe.executable!r} or fix executable"
        )
    platform = f"{os_key}/{arch_key}"
    return Target(platform, asset, prefix, member, installed), problem
