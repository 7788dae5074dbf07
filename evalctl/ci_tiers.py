"""Tiered CI: does this change need the (slow) quality job, or is the fast job enough?

The quality job runs real inference and compares with the committed baseline; it is worth
its minutes only when something that can move quality changed: prompts, cases, baselines,
the inference engine, the tools. `[gate]` in evalctl.toml names those paths as globs
(evalctl.config.GateSettings); this module lists the changed files and matches them.

Changed files are the union of
- `git diff --name-only --no-renames REF...HEAD`: what the branch changed since it left REF
  (three dots: relative to the merge base, so commits that landed on REF meanwhile do not
  count as this branch's changes);
- `git diff --name-only --no-renames HEAD`: staged and unstaged edits in the working tree;
- untracked files that are not ignored.
`--no-renames` lists both sides of a rename: moving a case file out of cases/ is a change
to cases/.

Globs are matched against the whole path from the repository root: `*` and `?` stay within
one directory, `**` spans any number of directories (`cases/**` is everything under cases/),
`[abc]` is a character class.
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

from pydantic import BaseModel

from evalctl.config import GateSettings
from evalctl.errors import BadInputError, InfraError


class GroupMatch(BaseModel):
    group: str
    files: list[str]
    patterns: list[str]


class GateDecision(BaseModel):
    run: bool
    ref: str
    reason: str
    matches: list[GroupMatch]
    changed: list[str]


@cache
def glob_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")  # zero or more whole directories
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[" and "]" in pattern[i + 2 :]:
            end = pattern.index("]", i + 2)
            body = pattern[i + 1 : end]
            negate = body.startswith("!")
            body = re.escape(body[1:] if negate else body).replace("\\-", "-")
            out.append(f"[{'^' if negate else ''}{body}]")
            i = end + 1
            continue
        else:
            out.append(re.escape(char))
        i += 1
    return re.compile("".join(out) + r"\Z")


def matches(path: str, pattern: str) -> bool:
    return glob_regex(pattern).match(path) is not None


def decide(changed: list[str], globs: GateSettings, ref: str) -> GateDecision:
    """Which configured groups the changed files touch; the quality job runs if any does."""
    found: list[GroupMatch] = []
    for group, patterns in globs.model_dump().items():
        hit_files: list[str] = []
        hit_patterns: list[str] = []
        for pattern in patterns:
            hits = [p for p in changed if matches(p, pattern)]
            if hits:
                hit_patterns.append(pattern)
                hit_files += [h for h in hits if h not in hit_files]
        if hit_files:
            found.append(GroupMatch(group=group, files=sorted(hit_files), patterns=hit_patterns))
    if found:
        groups = ", ".join(m.group for m in found)
        total = len({f for m in found for f in m.files})
        reason = f"{total} changed file{'s' if total != 1 else ''} touch {groups}"
    elif changed:
        reason = f"none of the {len(changed)} changed files touch a quality path"
    else:
        reason = f"nothing changed since {ref}"
    return GateDecision(run=bool(found), ref=ref, reason=reason, matches=found, changed=changed)


def _git(args: list[str], cwd: Path) -> str:
    try:
        proc = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=60
        )
    except FileNotFoundError:
        raise InfraError("git is not installed", hint="the gate reads `git diff`") from None
    if proc.returncode != 0:
        detail = proc.stderr.strip().splitlines()
        raise _GitFailed(detail[-1] if detail else f"git {' '.join(args)} failed")
    return proc.stdout


class _GitFailed(Exception):
    pass


def changed_files(ref: str, cwd: Path) -> list[str]:
    """Paths (from the repository root) changed on this branch since `ref`, plus the working
    tree's uncommitted and untracked files; sorted, without duplicates."""
    try:
        root = Path(_git(["rev-parse", "--show-toplevel"], cwd).strip())
    except _GitFailed:
        raise BadInputError(
            "not inside a git repository", file=str(cwd), hint="run the gate from a checkout"
        ) from None
    try:
        _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], root)
    except _GitFailed:
        raise BadInputError(
            f"unknown git revision {ref!r}",
            field="--changed-from",
            hint="in CI, fetch enough history (actions/checkout with fetch-depth: 0)",
        ) from None
    try:
        committed = _git(["diff", "--name-only", "--no-renames", "-z", f"{ref}...HEAD"], root)
    except _GitFailed as exc:
        raise BadInputError(
            f"cannot diff {ref}...HEAD: {exc}",
            field="--changed-from",
            hint="a shallow clone may lack the merge base; fetch with fetch-depth: 0",
        ) from None
    try:
        working = _git(["diff", "--name-only", "--no-renames", "-z", "HEAD"], root)
        untracked = _git(["ls-files", "--others", "--exclude-standard", "-z"], root)
    except _GitFailed as exc:
        raise InfraError(f"cannot list working-tree changes: {exc}") from None
    names = {n for chunk in (committed, working, untracked) for n in chunk.split("\0") if n}
    return sorted(names)


def gate(ref: str, globs: GateSettings, cwd: Path) -> GateDecision:
    return decide(changed_files(ref, cwd), globs, ref)
