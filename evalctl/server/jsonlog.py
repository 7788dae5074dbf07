"""The daemon's structured log: one JSON object per line, appended to a file.

JSON lines so that tests, `evalctl server status` and people with `jq` can all read the
same file; the daemon has no terminal (it runs in its own session), so this is its voice.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from evalctl.secrets import redact


class JsonLog:
    def __init__(self, path: Path | None):
        self.path = path
        self._lock = threading.Lock()
        self._pid = os.getpid()
        if path is None:
            self._fh: IO[str] = sys.stderr
        else:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            # Line-buffered append: records from a crashed daemon are already on disk.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self._fh = os.fdopen(fd, "a", buffering=1, encoding="utf-8")

    def event(self, event: str, **fields: Any) -> None:
        record = {
            "ts": datetime.now(UTC).isoformat(timespec="milliseconds"),
            "pid": self._pid,
            "event": event,
            **fields,
        }
        # Appended, not written through results.io: redacted here like every other file.
        line = redact(json.dumps(record, ensure_ascii=False, default=str))
        with self._lock:
            self._fh.write(line + "\n")

    def close(self) -> None:
        with self._lock:
            self._fh.flush()
            if self._fh is not sys.stderr:
                self._fh.close()


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every well-formed record in a daemon log (a torn last line is skipped)."""
    events: list[dict[str, Any]] = []
    if not path.is_file():
        return events
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            events.append(value)
    return events
