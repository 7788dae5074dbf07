"""One memory reading of a process: RSS, USS and anonymous memory.

- RSS counts every resident page, including the mmap'd model file and shared libraries.
- USS (psutil's `memory_full_info`, from /proc/PID/smaps) counts pages only this process
  maps; the model file's pages are still in it.
- Anonymous memory is `RssAnon` from /proc/PID/status: what the process allocated itself.
  Leaks are judged on this one (evalctl.stability.verdict). Where /proc/PID/status has no
  RssAnon (not Linux), RSS minus shared pages stands in for it, and the reading says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import psutil

from evalctl.errors import InfraError

AnonSource = Literal["RssAnon", "rss-shared"]


@dataclass(frozen=True)
class MemoryReading:
    rss_bytes: int
    uss_bytes: int
    anon_bytes: int
    anon_source: AnonSource


def read_memory(pid: int) -> MemoryReading:
    """Read the memory of `pid`; InfraError when it is gone or not ours to inspect."""
    try:
        info = psutil.Process(pid).memory_full_info()
    except psutil.NoSuchProcess:
        raise InfraError(f"process {pid} is gone; cannot sample its memory") from None
    except psutil.AccessDenied:
        raise InfraError(
            f"not allowed to read the memory of process {pid}",
            hint="sample a daemon started by the same user",
        ) from None
    anon = rss_anon(pid)
    if anon is None:
        return MemoryReading(info.rss, info.uss, max(0, info.rss - info.shared), "rss-shared")
    return MemoryReading(info.rss, info.uss, anon, "RssAnon")


def rss_anon(pid: int, proc_root: Path = Path("/proc")) -> int | None:
    """`RssAnon` of /proc/PID/status in bytes; None where the kernel does not report it."""
    try:
        text = (proc_root / str(pid) / "status").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("RssAnon:"):
            # "RssAnon:	  149128 kB": the kernel's kB are KiB.
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                return int(parts[1]) * 1024
    return None
