"""Saving the traceback of an internal error (exit 4) where the user can find and send it.

Under `$EVALCTL_HOME/logs/` when the home is usable; otherwise (the home may be the very
problem) in the system's temp directory. API keys are redacted like every other write.
"""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from pathlib import Path

from evalctl.secrets import redact


def save_traceback(exc: BaseException) -> str | None:
    """Write the traceback of `exc`; return the file's path, or None if nothing could be."""
    text = redact("".join(traceback.format_exception(exc)))
    name = f"internal-error-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
    for directory in _candidates():
        try:
            directory.mkdir(parents=True, exist_ok=True, mode=0o700)
            path = directory / name
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            return str(path)
        except Exception:  # a broken home must not hide the original error
            continue
    return None


def _candidates() -> list[Path]:
    dirs = []
    try:
        from evalctl.config import load_settings

        dirs.append(load_settings().logs_dir)
    except Exception:
        pass  # settings or home unusable: the temp directory below still works
    dirs.append(Path(tempfile.gettempdir()) / f"evalctl-{os.getuid()}-errors")
    return dirs
