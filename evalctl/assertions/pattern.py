"""User regular expressions (`regex`, `json-field`'s `regex`), run by the `regex` engine under
a time limit: a pattern that backtracks without end (`^(a+)+$` against `aaaa…!`) is stopped
and its check ends in `error`, instead of hanging the run.

The syntax is Python's `re` (the `regex` module's VERSION0, which accepts what `re` does,
plus possessive quantifiers and atomic groups, which keep backtracking in check).
"""

from __future__ import annotations

import regex

# Seconds one search may take. A well-formed pattern over an answer takes microseconds;
# only runaway backtracking comes near this.
SEARCH_TIMEOUT_S = 2.0


class PatternTimeoutError(Exception):
    """The search ran past SEARCH_TIMEOUT_S."""


def compile_problem(pattern: str) -> str | None:
    """Why the engine cannot compile `pattern`, or None."""
    try:
        regex.compile(pattern, regex.VERSION0)
    except regex.error as exc:
        return f"invalid regular expression: {exc}"
    except (ValueError, OverflowError, RecursionError) as exc:
        return f"invalid regular expression: {exc}"
    return None


def search(pattern: str, text: str, *, ignore_case: bool = False) -> bool:
    """True when `pattern` matches somewhere in `text`; PatternTimeoutError past the limit."""
    flags = regex.VERSION0 | (regex.IGNORECASE if ignore_case else 0)
    try:
        return regex.search(pattern, text, flags, timeout=SEARCH_TIMEOUT_S) is not None
    except TimeoutError:
        raise PatternTimeoutError(
            f"/{pattern}/ did not finish within {SEARCH_TIMEOUT_S:g}s on this text "
            "(catastrophic backtracking): rewrite it without nested repetition"
        ) from None
