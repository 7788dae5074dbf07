"""Where a daemon's files live: keyed by the model's SHA256, under $EVALCTL_HOME.

    run/<sha12>.sock    the gRPC socket (0600)      run/<sha12>.lock   flock + owner pid
    logs/<sha12>.log    structured JSON lines       logs/<sha12>.stderr.log  raw stderr

Unix socket paths are limited to 107 bytes; a deep $EVALCTL_HOME (pytest's tmp_path is
enough) falls back to a short per-user directory under /tmp, keyed by the home's path so
two homes never share a daemon.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from evalctl.config import Settings, ensure_private_dir
from evalctl.errors import EvalctlError, ExitCode

# sun_path is 108 bytes including the terminating NUL.
SOCKET_PATH_MAX = 107


@dataclass(frozen=True)
class DaemonPaths:
    socket: Path
    lock: Path
    log: Path
    stderr: Path


def key_for(sha256: str) -> str:
    return sha256[:12]


def daemon_paths(settings: Settings, sha256: str) -> DaemonPaths:
    """Create the private directories (0700) and return the paths for this model."""
    from evalctl.server.options import lock_path_for

    settings.private_home()
    run_dir = ensure_private_dir(settings.run_dir)
    logs_dir = ensure_private_dir(settings.logs_dir)
    key = key_for(sha256)
    socket = run_dir / f"{key}.sock"
    if len(os.fsencode(socket)) > SOCKET_PATH_MAX:
        socket = short_run_dir(settings.home) / f"{key}.sock"
    return DaemonPaths(
        socket=socket,
        lock=lock_path_for(socket),
        log=logs_dir / f"{key}.log",
        stderr=logs_dir / f"{key}.stderr.log",
    )


def short_run_dir_path(home: Path) -> Path:
    """/tmp/evalctl-<uid>-<hash of home>: short, per user and per EVALCTL_HOME."""
    base = Path("/tmp") if Path("/tmp").is_dir() else Path(tempfile.gettempdir())
    digest = hashlib.sha256(os.fsencode(home.expanduser().resolve())).hexdigest()[:10]
    return base / f"evalctl-{os.getuid()}-{digest}"


def short_run_dir(home: Path) -> Path:
    """Create (0700) the short run directory, refusing one that is someone else's."""
    path = short_run_dir_path(home)
    base = path.parent
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = os.lstat(path)
    # A world-writable /tmp lets anyone pre-create this name: trust it only if it is a
    # real directory that we own.
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise EvalctlError(
            f"{path} exists but is not a directory owned by you",
            hint="remove it, or set EVALCTL_HOME to a shorter path",
            code=ExitCode.INFRA,
        )
    if stat.S_IMODE(info.st_mode) != 0o700:
        path.chmod(0o700)
    # "/<sha12>.sock" is 18 bytes.
    if len(os.fsencode(path)) + 18 > SOCKET_PATH_MAX:
        raise EvalctlError(
            f"no socket path short enough under {base}",
            hint="set EVALCTL_HOME (or TMPDIR) to a shorter path",
            code=ExitCode.INFRA,
        )
    return path
