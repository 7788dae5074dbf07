"""The `--case` pattern: one glob, or several separated by commas, each matched against a
case's id or its full `suite/id` key. The case loader and baseline scoping share it, so a
run and the compare of that run agree on what was selected."""

from __future__ import annotations

import fnmatch


def case_matches(case_id: str, key: str, pattern: str) -> bool:
    for glob in pattern.split(","):
        glob = glob.strip()
        if glob and (fnmatch.fnmatchcase(case_id, glob) or fnmatch.fnmatchcase(key, glob)):
            return True
    return False
