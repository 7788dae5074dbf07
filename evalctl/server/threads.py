"""How many threads llama.cpp gets by default: the physical cores this process may use.

llama.cpp's own default (and the daemon's old one) is `cpu_count() // 2`, which assumes two
hardware threads per core. On a 2-vCPU VM with one thread per core that picks 1 thread and
gives up ~25% of the speed (106-110 tok/s with 1 thread against 134-137 with 2 on the
embedded model). So count the cores in the CPU affinity mask (a container or `taskset` may
allow fewer than the machine has), and collapse SMT siblings to one per physical core when
the kernel says which they are.

Then leave out the cores other work keeps busy (the 1-minute load average, rounded down),
when the daemon starts. ggml's threads wait for each other at every step of a token, so one
of them sharing a core with another busy process stalls them all: with one of the 2 cores
busy, 2 threads made 12 tok/s where 1 thread made 95 (benchmarks/bench_local.py). An idle
machine keeps every core. An explicit count (EVALCTL_LOCAL_THREADS, `local_threads`,
`--threads`) is used as given.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

SYSFS_CPU = Path("/sys/devices/system/cpu")


def allowed_cpus() -> set[int]:
    """The logical CPUs this process may run on (honours affinity where the OS has one)."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is not None:
        try:
            return set(getaffinity(0))
        except OSError:
            pass
    return set(range(os.cpu_count() or 1))


def physical_cores(cpus: Iterable[int], sysfs: Path = SYSFS_CPU) -> int | None:
    """How many distinct physical cores `cpus` span, or None when the topology is unknown."""
    cores: set[tuple[str, str]] = set()
    for cpu in cpus:
        topology = sysfs / f"cpu{cpu}" / "topology"
        try:
            package = (topology / "physical_package_id").read_text().strip()
            core = (topology / "core_id").read_text().strip()
        except OSError:
            return None
        cores.add((package, core))
    return len(cores) or None


def busy_cores() -> int:
    """Cores other work keeps busy right now: the 1-minute load average, rounded down."""
    try:
        return int(os.getloadavg()[0])
    except (AttributeError, OSError):
        return 0


def available_cores() -> int:
    """Physical cores among the allowed CPUs; the allowed CPUs when that is unknown."""
    cpus = allowed_cpus()
    return max(1, physical_cores(cpus) or len(cpus))


def default_threads() -> int:
    """The available cores less the busy ones, at least 1."""
    return max(1, available_cores() - busy_cores())
