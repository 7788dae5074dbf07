"""Append-only journal of finished cases, committed in groups.

What an interrupted run keeps (`--resume` runs the rest):
- Ctrl-C, SIGTERM, SIGKILL, a crash of evalctl: every case that finished. Each case's line is
  written to the file (one `write` on a file kept open) before the run moves on, so the
  operating system holds it whatever becomes of the process.
- A crash of the machine itself (power loss, kernel panic): the lines not yet fsync'd, at
  most the last group, `SYNC_INTERVAL_S` or `SYNC_EVERY` cases, whichever comes first. A
  writer thread fsyncs each group; fsync per case cost ~5 ms on a plain disk and, in series,
  set the pace of a large run (issue 41).

Every write holds an exclusive flock on the journal file itself: concurrent workers (threads
here, or a second process that got past the run directory's lock) each add whole lines, and
the repair that cuts a torn last line reads and truncates under the same lock, so it never
cuts a line another writer is adding.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from pydantic import ValidationError

from evalctl import userfiles
from evalctl.errors import BadInputError
from evalctl.results.models import CaseResult
from evalctl.secrets import redact


@contextlib.contextmanager
def _locked(fh: BinaryIO) -> Iterator[BinaryIO]:
    # flock belongs to the open file description: two opens in one process exclude each
    # other as two processes do. Closing the file drops it.
    fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
    yield fh


# A group: fsync'd at most this long after its first line was written, or once this many
# lines wait, whichever comes first.
SYNC_INTERVAL_S = 0.2
SYNC_EVERY = 100


class Journal:
    """The run's journal. `append` writes a line at once and leaves its fsync to a writer
    thread (started with the first line); `close` syncs what is left. Reading and repair
    need no open journal."""

    def __init__(
        self, path: Path, *, sync_interval_s: float = SYNC_INTERVAL_S, sync_every: int = SYNC_EVERY
    ):
        self.path = path
        self._sync_interval_s = sync_interval_s
        self._sync_every = sync_every
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._unsynced = 0
        self._wake = threading.Event()
        self._closing = False
        self._syncer: threading.Thread | None = None
        self._sync_error: OSError | None = None
        # fsyncs done: what a test counts to see lines committed in groups.
        self.syncs = 0

    def __enter__(self) -> Journal:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def append(self, case: CaseResult) -> None:
        line = (redact(case.model_dump_json()) + "\n").encode("utf-8")
        try:
            with self._lock:
                if self._sync_error is not None:
                    raise self._sync_error
                fd = self._open()
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    # One write of the whole line: a text file would split a long one into
                    # buffer-sized writes.
                    view = memoryview(line)
                    while view:
                        view = view[os.write(fd, view) :]
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                self._unsynced += 1
                if self._syncer is None:
                    self._syncer = threading.Thread(
                        target=self._sync_loop, name="evalctl-journal-sync", daemon=True
                    )
                    self._syncer.start()
                if self._unsynced >= self._sync_every:
                    self._wake.set()
        except OSError as exc:
            raise self._environment_error(exc, "append to the journal") from None

    def close(self) -> None:
        """Sync the last group and close the file; raises what a group's fsync met."""
        with self._lock:
            self._closing = True
        self._wake.set()
        if self._syncer is not None:
            self._syncer.join()
            self._syncer = None
        with self._lock:
            fd, self._fd = self._fd, None
            error, self._sync_error = self._sync_error, None
            self._closing = False
        if fd is None:
            return
        try:
            if error is None:
                self._sync(fd)
        except OSError as exc:
            error = exc
        finally:
            os.close(fd)
        if error is not None:
            raise self._environment_error(error, "sync the journal")

    def _open(self) -> int:
        if self._fd is None:
            # Kept open for the run: opening the file per case cost more than writing it.
            self._fd = os.open(
                self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644
            )
        return self._fd

    def _sync(self, fd: int) -> None:
        os.fsync(fd)
        self.syncs += 1

    def _sync_loop(self) -> None:
        while True:
            # Woken by a full group or by close; else the interval bounds a group's age.
            self._wake.wait(self._sync_interval_s)
            with self._lock:
                # Cleared with the count taken: a wake set since belongs to the next group.
                self._wake.clear()
                fd, pending, closing = self._fd, self._unsynced, self._closing
                self._unsynced = 0
            if fd is not None and pending:
                try:
                    self._sync(fd)  # outside the lock: appends go on meanwhile
                except OSError as exc:
                    with self._lock:
                        self._sync_error = exc
                    return
            if closing:
                return

    def _environment_error(self, exc: OSError, doing: str) -> Exception:
        # A full disk or a read-only mount is the machine's fault, not the run's: say so.
        error = userfiles.environment_error(exc, doing, self.path)
        return exc if error is None else error

    def repair(self) -> None:
        """Cut a last line left half-written by a kill, so new lines start on a line of their
        own. (`read` skips such a line anyway; appending after it would glue the next case
        onto it and lose that case too.)"""
        try:
            with self.path.open("rb+") as raw, _locked(raw) as fh:
                data = fh.read()  # re-read under the lock: the tail may have grown
                if not data or data.endswith(b"\n"):
                    return
                fh.truncate(data.rfind(b"\n") + 1)
                fh.flush()
                os.fsync(fh.fileno())
        except FileNotFoundError:
            return
        except IsADirectoryError:
            raise BadInputError(
                "is a directory, expected the run's journal", file=str(self.path)
            ) from None

    def read(self) -> list[CaseResult]:
        """The journaled cases. A last line without its newline is the case a kill cut short
        and is dropped; any other line that does not parse is damage, refused with its line
        number rather than silently run again."""
        if not self.path.exists():
            return []
        raw = userfiles.read_bytes(self.path, what="journal")
        lines = raw.split(b"\n")
        complete, partial = lines[:-1], lines[-1]
        cases = []
        for number, line in enumerate(complete, start=1):
            try:
                cases.append(CaseResult.model_validate_json(line))
            except ValidationError as exc:
                # Also not UTF-8 and nested too deep: pydantic reads the bytes itself.
                why = exc.errors()[0]["msg"]
                raise BadInputError(
                    f"line {number} is damaged ({why})",
                    file=str(self.path),
                    hint=f"delete line {number} to run that case again, or start a new run",
                ) from None
        if partial:
            # A kill mid-write: the case in flight, run again on resume.
            with contextlib.suppress(ValidationError):
                cases.append(CaseResult.model_validate_json(partial))
        return cases
