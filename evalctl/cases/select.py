"""Which cases a command selects.

The `--case` pattern: one glob, or several separated by commas, each matched against a
case's id or its full `suite/id` key. The case loader and baseline scoping share it, so a
run and the compare of that run agree on what was selected.

`--feature TAG` and `--meta KEY=VALUE` (a `CaseFilter`): a case is selected when its
`features` include every tag given and its `metadata` has every pair given. `run` and
`cases list` select on the suite files; `compare` on what the results recorded.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field

from evalctl.errors import BadInputError


def case_matches(case_id: str, key: str, pattern: str) -> bool:
    for glob in pattern.split(","):
        glob = glob.strip()
        if glob and (fnmatch.fnmatchcase(case_id, glob) or fnmatch.fnmatchcase(key, glob)):
            return True
    return False


@dataclass(frozen=True)
class CaseFilter:
    """`--feature` tags and `--meta` pairs, all of which a selected case has."""

    features: tuple[str, ...] = ()
    meta: Mapping[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.features or self.meta)

    def matches(self, features: list[str], metadata: Mapping[str, str]) -> bool:
        return all(tag in features for tag in self.features) and all(
            metadata.get(key) == value for key, value in self.meta.items()
        )


def parse_meta(pairs: list[str] | None) -> dict[str, str]:
    """`--meta key=value` flags as a mapping; a pair without `=` or a key is bad input."""
    meta: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise BadInputError(f"{pair!r} is not key=value", field="--meta")
        meta[key.strip()] = value.strip()
    return meta


def case_filter(features: list[str] | None, meta: list[str] | None) -> CaseFilter:
    """The filter the `--feature` and `--meta` flags ask for (empty when neither is given)."""
    return CaseFilter(features=tuple(features or ()), meta=parse_meta(meta))
