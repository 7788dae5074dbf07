"""The path rule: which files a user's file may name, and which names evalctl may build.

A suite names files (`cases_from`, a tool's `fixture`); a suite may come from a pull request
nobody has reviewed yet, so each such name must resolve inside the suite's project
(`project_root`): an absolute path, a `..` that climbs out, or a symlink that leads out is
refused with a BadInputError naming the file and field (exit 2). The user opts out with
`--allow-outside-paths` on the command line, or `allow_outside_paths = true` in evalctl.toml;
the file's setting is not honoured where tools may not run code (`--no-tools-exec`,
EVALCTL_NO_TOOLS_EXEC), since that is where the suites, and that file, are not trusted.

Names evalctl builds from ids it reads (a matrix cell's directory and baseline file) must be
one plain file name (`check_name`): never a path, `..`, or a hidden file.

The opt-ins are process settings, like the redaction list: the CLI and `load_settings` set
them (`allow_from_flag`, `allow_from_config`, `refuse_tools_exec`); `reset` clears them.
docs/security.md, "The path rule", is the user's account of this module.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from evalctl.errors import BadInputError

CONFIG_FILE = "evalctl.toml"
NO_TOOLS_EXEC_ENV = "EVALCTL_NO_TOOLS_EXEC"
# A name evalctl gives a file or directory it writes: letters, digits, '_', '.', '-', not
# starting with '.' or '-' (no `..`, no hidden file, no option), at most 200 characters.
SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")
SAFE_NAME_WORDS = (
    "letters, digits, '_', '.' and '-', starting with a letter, digit or '_' (a file name, "
    "never a path)"
)
# An environment value click reads as false; any other non-empty value is true.
_FALSE = frozenset({"", "0", "false", "f", "no", "n", "off"})
_HINT = (
    "name a file inside the project; to allow this one, pass --allow-outside-paths (or set "
    "allow_outside_paths = true in evalctl.toml, which --no-tools-exec ignores): "
    "docs/security.md, 'The path rule'"
)


@dataclass
class _Policy:
    flag: bool = False  # --allow-outside-paths
    config: bool = False  # allow_outside_paths = true in evalctl.toml
    no_tools_exec: bool = False  # --no-tools-exec


_policy = _Policy()


def reset() -> None:
    """Back to the rule: nothing outside the project."""
    global _policy
    _policy = _Policy()


def allow_from_flag(allowed: bool) -> None:
    _policy.flag = allowed


def allow_from_config(allowed: bool) -> None:
    _policy.config = allowed


def refuse_tools_exec(refused: bool) -> None:
    """`--no-tools-exec` was given: evalctl.toml's `allow_outside_paths` is not honoured."""
    _policy.no_tools_exec = refused


def outside_allowed(env: Mapping[str, str] | None = None) -> bool:
    """May a file name a path outside its project? The flag always counts; evalctl.toml's
    setting only where tools may run code (no --no-tools-exec, no EVALCTL_NO_TOOLS_EXEC)."""
    if _policy.flag:
        return True
    env = os.environ if env is None else env
    untrusted = _policy.no_tools_exec or env.get(NO_TOOLS_EXEC_ENV, "").lower() not in _FALSE
    return _policy.config and not untrusted


def project_root(directory: Path) -> Path:
    """The project a file in `directory` belongs to: the nearest directory at or above it
    holding evalctl.toml, else the repository's root (the nearest holding `.git`), else
    `directory` itself. Resolved (symlinks followed)."""
    start = directory.resolve()
    for candidate in (start, *start.parents):
        if (candidate / CONFIG_FILE).is_file() or (candidate / ".git").exists():
            return candidate
    return start


def inside_project(name: str, base: Path, *, file: Path | str, field: str) -> Path:
    """`base / name`, where `name` is a path as written in `file` (at `field`), relative to
    `base` (the directory of `file`). Refused unless it resolves inside the project of `base`,
    symlinks followed, or the user allowed paths outside it."""
    path = base / name
    if outside_allowed():
        return path
    root = project_root(base)
    if Path(name).is_absolute():
        raise BadInputError(
            f"{name!r} is an absolute path; a file named here must lie inside the project "
            f"({root}) unless --allow-outside-paths is given",
            file=str(file),
            field=field,
            hint=_HINT,
        )
    resolved = path.resolve()
    if resolved == root or root in resolved.parents:
        return path
    lexical = Path(os.path.normpath(base.resolve() / name))
    how = "through a symlink" if lexical == root or root in lexical.parents else "with '..'"
    raise BadInputError(
        f"{name!r} leads out of the project ({root}) {how}, to {resolved}; refused unless "
        "--allow-outside-paths is given",
        file=str(file),
        field=field,
        hint=_HINT,
    )


def check_name(name: str, *, what: str, file: Path | str | None, field: str) -> str:
    """`name`, when it can be one file name evalctl writes in a directory it chose; else a
    BadInputError naming `file` and `field` (an id read from a file a user handed over)."""
    if not SAFE_NAME.fullmatch(name):
        raise BadInputError(
            f"{what} {name!r} cannot name a file: it must be {SAFE_NAME_WORDS}",
            file=str(file) if file is not None else None,
            field=field,
        )
    return name
