"""Where a benchmark's figures were measured: the machine (cores this process may use and the
CPU's model name), the date (UTC) and the load average when it started. Every file
benchmarks/results/*.json carries these beside its figures, and the generated blocks of the
docs print them (benchmarks/docs_tables.py)."""

from __future__ import annotations

import datetime as dt
import os
import platform
from pathlib import Path
from typing import Any


def machine() -> str:
    """'2-core AMD EPYC': the cores this process may use and the CPU's model name."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{cores}-core {model}"


def stamp() -> dict[str, Any]:
    """The date, machine and load average to record beside figures measured now."""
    return {
        "date": dt.datetime.now(dt.UTC).date().isoformat(),
        "machine": machine(),
        "load_average": round(os.getloadavg()[0], 1),
    }
