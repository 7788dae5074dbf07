"""Running a user's program once so that nothing it starts outlives the call, or evalctl: the
`command` tools of `[[suite.tool]]` and the `command` target share it.

The program runs under the launcher (`evalctl.launch`) in a session of its own: when the
program exits, at the deadline, or when evalctl dies (the launcher's death signal), every
process it started is killed and reaped, `setsid` and `nohup ... &` children included. So a
background child that keeps stdout open cannot hold the call past the program's own exit:
once the program is gone, so is the child, and the pipe closes.

The payload is written to stdin as the program reads it; stdout is read as it comes and never
held past `limit` bytes (the call is stopped there); of stderr only the tail is kept.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from evalctl import launch

# Only stderr's tail is ever shown, so only that much is kept while reading.
STDERR_KEEP = 8192
_CHUNK = 65536
# The launcher ends the program's processes within moments of SIGTERM; if it ever does not,
# its own group is killed after this long rather than waiting on it.
_LAUNCHER_GRACE_S = 10.0
_LAUNCHER = str(Path(launch.__file__).resolve())


@dataclass
class Finished:
    """What came of one call."""

    # The program's exit status (negative: the signal that ended it); None if it was stopped.
    returncode: int | None
    stdout: bytes
    # The end of stderr (at most STDERR_KEEP bytes).
    stderr: bytes
    # Why the call was stopped: "timeout" (the deadline passed), "too large" (stdout went
    # past the limit); None when the program ended on its own.
    cut: str | None

    @property
    def cannot_start(self) -> str | None:
        """Why the launcher could not start the program (`name: reason`), if it could not."""
        text = self.stderr.decode("utf-8", errors="replace")
        if launch.CANNOT_START not in text:
            return None
        return text[text.index(launch.CANNOT_START) + len(launch.CANNOT_START) :].strip()


class _Exchange:
    """One call's pipes: the payload written, stdout read up to the cap, stderr's tail kept."""

    def __init__(self, proc: subprocess.Popen[bytes], payload: bytes, limit: int):
        self.proc = proc
        self.limit = limit
        self.stdout = bytearray()
        self.stderr = bytearray()
        self._pending = memoryview(payload)

    def run(self, timeout: float) -> str | None:
        """Until the program's pipes close: None, or why it was cut short
        ("timeout", "too large")."""
        proc = self.proc
        assert proc.stdin and proc.stdout and proc.stderr
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout.fileno(), selectors.EVENT_READ, self.stdout)
            sel.register(proc.stderr.fileno(), selectors.EVENT_READ, self.stderr)
            if self._pending:
                os.set_blocking(proc.stdin.fileno(), False)
                sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, None)
            else:
                proc.stdin.close()
            while len(sel.get_map()) > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return "timeout"
                for key, _ in sel.select(remaining):
                    if key.data is None:
                        self._write(sel, key.fd)
                        continue
                    chunk = os.read(key.fd, _CHUNK)
                    if not chunk:
                        sel.unregister(key.fd)
                    elif key.data is self.stdout:
                        self.stdout += chunk
                        if len(self.stdout) > self.limit:
                            return "too large"
                    else:
                        self.stderr += chunk
                        del self.stderr[:-STDERR_KEEP]
        return None

    def _write(self, sel: selectors.BaseSelector, fd: int) -> None:
        try:
            written = os.write(fd, self._pending[:_CHUNK])
        except BlockingIOError:
            return
        except BrokenPipeError:
            # The program exited (or closed stdin) without reading all of it: its business.
            written = len(self._pending)
        self._pending = self._pending[written:]
        if not self._pending:
            sel.unregister(fd)
            assert self.proc.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                self.proc.stdin.close()


def _sweep(call: str) -> None:
    """Kill what a launcher that died before cleaning up (SIGKILLed by someone, the OOM
    killer) left running: every process still carrying the call's token."""
    # A few passes: one may fork between the scan and the kill. A killed process turns
    # zombie, whose environment reads empty, so it is not found again.
    for _ in range(10):
        left = launch.marked(call)
        if not left:
            return
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End the launcher, which ends everything the program started, then reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(_LAUNCHER_GRACE_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def run(
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    payload: bytes,
    timeout: float,
    limit: int,
) -> Finished:
    """Run `argv` in `cwd` with `env`, `payload` on stdin, for at most `timeout` seconds and
    `limit` bytes of stdout. OSError when the launcher itself cannot start."""
    env = dict(env)
    env[launch.PARENT_ENV] = str(os.getpid())
    call = env[launch.CALL_ENV] = uuid.uuid4().hex
    # Its own session: the program gets no terminal and none of evalctl's signals; the
    # launcher cleans up after it, whatever it started.
    proc = subprocess.Popen(
        [sys.executable, "-I", "-S", _LAUNCHER, *argv],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    exchange = _Exchange(proc, payload, limit)
    try:
        cut = exchange.run(timeout)
    finally:
        _stop(proc)
        if proc.returncode is not None and proc.returncode < 0:
            # The launcher ended by a signal: maybe before it could clean up.
            _sweep(call)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
    return Finished(
        returncode=None if cut else proc.returncode,
        stdout=bytes(exchange.stdout),
        stderr=bytes(exchange.stderr),
        cut=cut,
    )
