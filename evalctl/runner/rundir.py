"""One run per run directory: an exclusive flock on `<out>/run.lock` for a run's whole life.

Two runs writing one directory would interleave one journal and overwrite each other's
results; a later `--resume` would then mix them. The lock file holds the owner's pid so the
refusal can name it, and is removed when the run ends (a killed run's stale file is harmless:
the kernel drops the flock with the process, and the next run takes it over).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evalctl import flock, userfiles
from evalctl.errors import BadInputError, InfraError

RUN_LOCK = "run.lock"


def prepare_out_dir(out_dir: Path) -> None:
    """Create `--out` (and parents); a path that is a file, or lies under one, is bad input."""
    if out_dir.exists() and not out_dir.is_dir():
        raise BadInputError(
            "exists and is not a directory; --out names the run's directory",
            file=str(out_dir),
            hint="pass a new or existing directory to --out",
        )
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise BadInputError(
            "cannot create it: a parent of this path is a file", file=str(out_dir)
        ) from None
    except OSError as exc:
        error = userfiles.environment_error(exc, "create the run directory", out_dir)
        raise (error or InfraError(f"cannot create {out_dir}: {exc.strerror}")) from None


@contextmanager
def run_dir_lock(out_dir: Path) -> Iterator[None]:
    """Hold the run directory for one run; a second run (or resume) into it is refused."""
    path = out_dir / RUN_LOCK
    try:
        fd = flock.try_lock(path)
    except IsADirectoryError:
        raise BadInputError(f"{RUN_LOCK} is a directory; remove it", file=str(path)) from None
    except (FileNotFoundError, NotADirectoryError):
        raise BadInputError("not a run directory (no such directory)", file=str(out_dir)) from None
    except OSError as exc:
        error = userfiles.environment_error(exc, "lock the run directory", out_dir)
        raise (error or InfraError(f"cannot lock {path}: {exc.strerror}")) from None
    if fd is None:
        pid = flock.read_pid(path)
        who = f"pid {pid}" if pid is not None else "a process that is still starting"
        raise BadInputError(
            f"another evalctl run ({who}) is using this run directory",
            file=str(out_dir),
            hint="wait for that run to finish, or pass a different --out",
        )
    try:
        flock.write_pid(fd, os.getpid())
        yield
    finally:
        flock.release(fd, path)
