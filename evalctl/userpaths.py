"""The path rule: which files a user's file may name, and which names evalctl may build.

A suite names files (`cases_from`, a tool's `fixture`, `prompt_file` at every level,
names-in's `names_from`, and evalctl.toml its `[matrix]` prompt files); a suite may come from a
pull request nobody has reviewed yet, so each such name, as it reads once a data-file row has
filled it in, must resolve inside the suite's project (`project_root`): an absolute path, a
`..` that climbs out, or a symlink that leads out is refused with a BadInputError naming the
file and field (exit 2). The user opts out with `--allow-outside-paths` on the command line,
or `allow_outside_paths = true` in evalctl.toml; the file's setting is not honoured where tools
may not run code (`--no-tools-exec`, EVALCTL_NO_TOOLS_EXEC), since that is where the suites,
and that file, are not trusted. Whatever the opt-ins, a name never leads into a `.git`
directory (CI checkouts keep a token in `.git/config`), and a name holding a NUL byte, or one
longer than a file system takes, is refused the same way rather than failing later.

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
# The longest file name and path Linux takes (NAME_MAX, PATH_MAX less its NUL), in bytes:
# a longer name is refused as bad input, not left to fail as ENAMETOOLONG mid-run.
MAX_NAME_BYTES = 255
MAX_PATH_BYTES = 4095
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


def tools_exec_refused(env: Mapping[str, str] | None = None) -> bool:
    """Whether EVALCTL_NO_TOOLS_EXEC says no code may run: any value but empty, `0`,
    `false`, `no`, `off` (evalctl.config reads evalctl.toml by the same answer)."""
    env = os.environ if env is None else env
    return env.get(NO_TOOLS_EXEC_ENV, "").strip().lower() not in _FALSE


def outside_allowed(env: Mapping[str, str] | None = None) -> bool:
    """May a file name a path outside its project? The flag always counts; evalctl.toml's
    setting only where tools may run code (no --no-tools-exec, no EVALCTL_NO_TOOLS_EXEC)."""
    if _policy.flag:
        return True
    env = os.environ if env is None else env
    untrusted = _policy.no_tools_exec or env.get(NO_TOOLS_EXEC_ENV, "").lower() not in _FALSE
    return _policy.config and not untrusted


def project_root(directory: Path) -> Path:
    """The project a file in `directory` belongs to: the repository's root (the nearest
    directory at or above it holding `.git`), where there is one; else the nearest holding
    evalctl.toml; else `directory` itself. Resolved (symlinks followed). The repository wins
    so that a monorepo's `evals/evalctl.toml` may name `data/golden.csv` beside `evals/`."""
    start = Path(os.path.realpath(directory))
    for candidate in (start, *start.parents):
        # os.path: a directory that cannot be searched is no marker, not an exception.
        if os.path.lexists(candidate / ".git"):
            return candidate
    for candidate in (start, *start.parents):
        if os.path.isfile(candidate / CONFIG_FILE):
            return candidate
    return start


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a path at all (a NUL byte, a name longer than the file system
    takes, a character no file name can hold), in words; None when it can be one."""
    if "\x00" in name:
        return "holds a NUL byte, which no file name can"
    try:
        raw = os.fsencode(name)
    except UnicodeEncodeError:
        return "holds a character no file name can (a lone surrogate)"
    if len(raw) > MAX_PATH_BYTES:
        return f"is {len(raw)} bytes long; a path may have at most {MAX_PATH_BYTES}"
    longest = max(raw.split(b"/"), key=len)
    if len(longest) > MAX_NAME_BYTES:
        return (
            f"has a name of {len(longest)} bytes; a file or directory name may have at most "
            f"{MAX_NAME_BYTES}"
        )
    return None


def shown(name: str) -> str:
    """`name` as an error message quotes it: repr'd, and cut short when it is long."""
    text = repr(name)
    return text if len(text) <= 80 else f"{text[:60]}...{text[-12:]} ({len(name)} characters)"


def _in_git_dir(path: Path) -> bool:
    return any(part.casefold() == ".git" for part in path.parts)


def inside_project(name: str, base: Path, *, file: Path | str, field: str) -> Path:
    """`base / name`, where `name` is a path as written in `file` (at `field`), relative to
    `base` (the directory of `file`). Refused unless it resolves inside the project of `base`,
    symlinks followed, or the user allowed paths outside it."""
    problem = name_problem(name)
    if problem is not None:
        raise BadInputError(f"{shown(name)} {problem}", file=str(file), field=field)
    path = base / name
    # os.path.realpath, not Path.resolve: a symlink loop is a path that leads nowhere here,
    # not a RuntimeError.
    resolved = Path(os.path.realpath(path))
    lexical = Path(os.path.normpath(os.path.realpath(base) / Path(name)))
    if _in_git_dir(resolved) or _in_git_dir(lexical):
        raise BadInputError(
            f"{shown(name)} leads into a .git directory ({resolved}), which a suite may never "
            "name: CI checkouts keep credentials there (.git/config)",
            file=str(file),
            field=field,
            hint="name a file outside .git/; --allow-outside-paths does not change this",
        )
    if outside_allowed():
        return path
    root = project_root(base)
    if Path(name).is_absolute():
        raise BadInputError(
            f"{shown(name)} is an absolute path; a file named here must lie inside the project "
            f"({root}) unless --allow-outside-paths is given",
            file=str(file),
            field=field,
            hint=_HINT,
        )
    if resolved == root or root in resolved.parents:
        return path
    how = "through a symlink" if lexical == root or root in lexical.parents else "with '..'"
    raise BadInputError(
        f"{shown(name)} leads out of the project ({root}) {how}, to {resolved}; refused unless "
        "--allow-outside-paths is given",
        file=str(file),
        field=field,
        hint=_HINT,
    )


def suite_file_inside(path: Path, directory: Path) -> Path:
    """`path`, a suite file found in the cases folder `directory`, when it lies inside the
    folder's project, symlinks followed; else a BadInputError naming it (a symlink out is
    a suite from anywhere, with that place's files in reach)."""
    resolved = Path(os.path.realpath(path))
    if outside_allowed() and not _in_git_dir(resolved):
        return path
    root = project_root(directory)
    if (resolved == root or root in resolved.parents) and not _in_git_dir(resolved):
        return path
    raise BadInputError(
        f"this suite file is a symlink leading out of the project ({root}) to {resolved}: "
        "a suite there would name that place's files; refused, not skipped, unless "
        "--allow-outside-paths is given",
        file=str(path),
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
