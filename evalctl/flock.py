"""The flock that guarantees one daemon per socket.

gRPC silently unlinks and re-binds an existing socket path, so a second daemon would
steal the first one's socket: the lock must be taken *before* binding. The lock file also
holds the owner's pid, so `stop` can signal a daemon that no longer answers RPCs.

The daemon deletes the lock file on exit. A process that opened the old file just before
that could then lock an orphaned inode while a third process creates and locks a new
file; `try_lock` therefore re-checks, after locking, that the path still names the file it
locked.

`held` is the waiting kind, for a read-modify-write of a shared file (a baseline): writers
take turns instead of one losing the other's update.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


def try_lock(path: Path) -> int | None:
    """Take the exclusive lock without blocking: a file descriptor, or None if held."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return None
            raise
        try:
            same = os.stat(path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        os.close(fd)  # the file was replaced under us: try the new one


def is_locked(path: Path) -> bool:
    """Whether some process holds the lock (a daemon is starting or running)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
            return True
        raise
    finally:
        os.close(fd)
    return False


def write_pid(fd: int, pid: int) -> None:
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{pid}\n".encode(), 0)


def read_pid(path: Path) -> int | None:
    try:
        text = path.read_text(encoding="ascii").strip()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def release(fd: int, path: Path | None = None) -> None:
    """Drop the lock; with `path`, delete the lock file first (while still holding it)."""
    if path is not None:
        with contextlib.suppress(FileNotFoundError):
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                path.unlink()
    os.close(fd)


@contextlib.contextmanager
def held(path: Path, *, remove: bool = False) -> Iterator[None]:
    """Hold the exclusive lock on `path` (created if missing) for the block, waiting for any
    other holder. By default the file is left in place. With `remove`, it is deleted before
    the lock is dropped (a lock file beside a user's file, which they would commit): a waiter
    that then gets the lock on the deleted file sees the path no longer names it and takes
    the lock again on the path's new file, as `try_lock` does."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if not remove:
                break
            try:
                same = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            break
        os.close(fd)  # deleted by the holder before us: lock the path's file
    try:
        yield
    finally:
        release(fd, path if remove else None)
