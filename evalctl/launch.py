"""The small supervisor every command tool call and command target request runs under, so
that nothing it starts outlives the call, or evalctl.

`evalctl.supervise` starts `python -I -S <this file> PROGRAM ARGS...` in a new session. This
process then:
- becomes a child subreaper (Linux `PR_SET_CHILD_SUBREAPER`): whatever the command starts
  and leaves behind, `nohup ... &` and `setsid ...` included, is re-parented here rather than
  to init, so it can still be found;
- asks for SIGTERM when its parent dies (`PR_SET_PDEATHSIG`), so a SIGKILLed evalctl still
  takes its tools and targets with it. The signal follows the *thread* that started this
  process: the thread that runs a call waits for it, so it outlives it;
- runs the command as its child, in a process group of its own, and waits for it;
- when the command exits, or on SIGTERM (evalctl's timeout or output cap, or evalctl's
  death), kills the command's group and every descendant left, reaps them all, and exits
  with the command's status (re-raising the signal that ended it, if one did).

It imports only the standard library: it runs as a file (`-I -S`), so it starts fast and needs
evalctl to be importable nowhere. Off Linux there is no subreaper nor death signal; the
command's process group is still killed after every call.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
# The pid of the evalctl that started this launcher: if it is gone before the death signal
# was armed, the signal will never come, so the launcher gives up at once.
PARENT_ENV = "EVALCTL_TOOL_PARENT"
# Set to a token unique to the call, in the command's environment and so its descendants':
# if this launcher is itself killed before it cleans up, evalctl finds what is left by it.
CALL_ENV = "EVALCTL_TOOL_CALL"
# The line a command that cannot be started leaves on stderr (evalctl.supervise reads it).
CANNOT_START = "evalctl-launch: cannot start "
# A descendant stuck where SIGKILL cannot reach it (uninterruptible sleep) must not hang the
# run: give up on it after this many sweeps (about 10 s).
_MAX_SWEEPS = 2000


class _Stop(Exception):
    pass


def _prctl(option: int, arg: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, arg, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _stop(signum: int, frame: object) -> None:
    raise _Stop


def descendants(root: int) -> set[int]:
    """Every process below `root` (zombies included), read from /proc; empty without it."""
    parent_of: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return set()
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
        except OSError:
            continue
        # The command name sits in parentheses and may hold spaces or ')': the fields that
        # follow the last ')' are state, then the parent's pid.
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and fields[1].isdigit():
            parent_of[int(entry)] = int(fields[1])
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {pid for pid, ppid in parent_of.items() if ppid in frontier} - found
        found |= frontier
    return found


def marked(call: str) -> set[int]:
    """The processes (of this user: others' environments are unreadable) whose environment
    carries CALL_ENV=`call`; empty without /proc."""
    needle = f"{CALL_ENV}={call}".encode()
    found: set[int] = set()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                if needle in fh.read().split(b"\0"):
                    found.add(int(entry))
        except OSError:
            continue
    return found


def _reap() -> bool:
    """Reap every child that has ended; whether any was."""
    reaped = False
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid == 0:
            return reaped
        reaped = True


def end_all(group: int) -> None:
    """Kill the command's process group and every descendant of this process; reap them."""
    # Off Linux the group is all that can be found; on Linux every member of it is a
    # descendant too (re-parented here), found by the sweeps below.
    with contextlib.suppress(OSError):
        os.killpg(group, signal.SIGKILL)
    me = os.getpid()
    for _ in range(_MAX_SWEEPS):
        left = descendants(me)
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        reaped = _reap()
        if not left:
            return
        if not reaped:
            # Killed, not yet dead, or a zombie whose parent is still dying and will hand it
            # to this subreaper: give them a moment.
            time.sleep(0.005)


def _exec_child(argv: list[str]) -> None:
    # In the forked child, until exec: any failure ends here, never in the parent's code.
    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.setpgid(0, 0)
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"{CANNOT_START}{argv[0]}: {exc.strerror or exc}\n".encode())
    finally:
        os._exit(127)


def main(argv: list[str]) -> int:
    if not argv:
        os.write(2, b"usage: launch.py PROGRAM [ARGS...]\n")
        return 2
    parent = os.environ.pop(PARENT_ENV, "")
    signal.signal(signal.SIGTERM, _stop)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if parent.isdigit() and os.getppid() != int(parent):
        return 1
    child = -1
    status: int | None = None
    try:
        child = os.fork()
        if child == 0:
            _exec_child(argv)
        # The arguments went to the command; this process keeps no pipe the writer waits on.
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        while status is None:
            pid, raw = os.waitpid(child, 0)
            if pid == child:
                status = raw
    except _Stop:
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if child > 0:
            end_all(child)
    if status is None:
        return 128 + signal.SIGTERM
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        with contextlib.suppress(OSError, ValueError):  # SIGKILL has no handler to reset
            signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        return 128 + sig
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
