"""Is a process alive, and wait until it is not; a fully exited zombie counts as dead.

The daemon is our child when we spawned it: once killed it stays a zombie (its pid still
"exists") until reaped, so the Popen object, when we have one, is polled instead.
"""

from __future__ import annotations

import os
import subprocess
import time

import psutil


def alive(pid: int | None, proc: subprocess.Popen[bytes] | None = None) -> bool:
    if pid is None:
        return False
    if proc is not None and proc.pid == pid:
        # waitpid() reports our child only once all its threads are gone (and its files,
        # including the flock, closed): the authoritative answer.
        return proc.poll() is None
    try:
        process = psutil.Process(pid)
        if process.status() != psutil.STATUS_ZOMBIE:
            return True
        # A killed multi-threaded process shows a zombie leader while its other threads
        # are still exiting, holding its files open; only a lone zombie is really gone.
        return process.num_threads() > 1
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # exists, but belongs to someone else


def wait_gone(pid: int, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> bool:
    """True once `pid` has exited (within `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    while alive(pid, proc):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def signal_pid(pid: int, signum: int) -> bool:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return False
    return True
