"""How a page names another: one path per page (`runs/ID`, `cases/SUITE/ID`, ...), written as
a root-absolute URL by the live server and as a relative file path in a static site, so the
same templates serve both and a static site works from a subdirectory or `file://`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote, urlencode

# A path segment a static site may use as a file name as it is; anything else is spelled
# with `~XX` escapes (injective: `~` itself is escaped), so no id can climb out of OUT.
_PLAIN_SEGMENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


def file_segment(segment: str) -> str:
    """`segment` as a safe file name: kept when plain, else every byte but letters, digits,
    `_` and `-` as `~XX` (dots too, so `..` cannot survive)."""
    if _PLAIN_SEGMENT.match(segment) and segment not in (".", ".."):
        return segment
    return "".join(
        ch if re.match(r"[A-Za-z0-9_-]", ch) else "".join(f"~{b:02X}" for b in ch.encode())
        for ch in segment
    )


@dataclass(frozen=True)
class Links:
    """Where this page's links point: live (`/runs/ID?x=1`) or static (relative files)."""

    static: bool = False
    # Segments from the static site's root to this page's folder (`runs/ID` is 2 deep).
    depth: int = 0

    def to(self, *segments: str, **query: str | int | None) -> str:
        """The link to the page at `segments` (none: the home page), with `query` when live;
        a static page has no query (its one view is the default)."""
        if self.static:
            parts = [file_segment(s) for s in segments]
            return "../" * self.depth + "".join(p + "/" for p in parts) + "index.html"
        path = "/" + "/".join(quote(s, safe="") for s in segments)
        kept = {k: v for k, v in query.items() if v not in (None, "")}
        return path + ("?" + urlencode(kept) if kept else "")

    def at(self, depth: int) -> Links:
        return Links(self.static, depth)
