"""Writing a report (JUnit, Markdown, HTML) to a path the user chose."""

from __future__ import annotations

from pathlib import Path

from evalctl.errors import BadInputError
from evalctl.results.io import write_text_atomic


def write_report(path: Path, text: str) -> Path:
    """Atomically write `text` to `path`, creating its directory; return the path.

    Reports are views of results.json; written atomically all the same, so a CI step that
    uploads one never picks up half a file.
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInputError(f"cannot create directory: {exc.strerror}", file=str(path)) from None
    write_text_atomic(path, text)
    return path
