"""Text from models, made safe to show: control characters made visible, counts worded.

Model output can hold anything: NUL, ANSI escape sequences that recolour or clear a terminal
or a log viewer, bidirectional overrides that reorder what a reader sees. Reports show such
characters as visible symbols instead of passing them through.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalctl.results.models import CaseResult

# C0 controls except tab and newline (carriage return too: it rewrites a line in a log),
# DEL, C1 controls, and the bidirectional embedding/override/isolate characters.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x20:
        return chr(0x2400 + code)  # Unicode's "control pictures": ␀ ␛ ...
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"<U+{code:04X}>"


# The terminal's colour (a Rich style) for each case status, and so for the tone of a verdict
# or of a comparison's category (`evalctl.errors.Tone`).
STATUS_STYLE: dict[str, str] = {
    "pass": "green",
    "fail": "red",
    "error": "magenta",
    "flaky": "yellow",
    "skipped": "dim",
}


def rate_tone(passed: int, runs: int) -> str:
    """The status a sampled pass rate is coloured as (a key of `STATUS_STYLE`): `pass` when
    every sample passed, `fail` when none did, `flaky` in between (`skipped`, dim: no sample)."""
    if runs <= 0:
        return "skipped"
    if passed >= runs:
        return "pass"
    return "fail" if passed <= 0 else "flaky"


def visible_controls(text: str) -> str:
    """`text` with every control character replaced by a visible stand-in (␀, ␛, <U+202E>);
    a CRLF line end stays a line end."""
    return _CONTROL.sub(_visible, text.replace("\r\n", "\n"))


def plural(count: int, noun: str, many: str | None = None) -> str:
    """`1 regression`, `2 regressions`."""
    return f"{count} {noun if count == 1 else (many or noun + 's')}"


def percent(rate: float | None) -> str:
    """`67%`, or `-` when there is no rate (nothing scored)."""
    return "-" if rate is None else f"{rate:.0%}"


def pass_rate(case: CaseResult) -> str:
    """`3/5 (23%-88%)`: passes over scored attempts, with the 95% interval when the case
    was repeated; `-` when no attempt was scored."""
    passed, runs = case.pass_counts()
    if runs == 0:
        return "-"
    text = f"{passed}/{runs}"
    if runs > 1 and case.pass_ci_low is not None and case.pass_ci_high is not None:
        text += f" ({case.pass_ci_low:.0%}-{case.pass_ci_high:.0%})"
    return text
