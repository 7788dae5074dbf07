"""How many threads llama.cpp gets by default: the physical cores this process may use.

llama.cpp's own default (and the daemon's old one) is `cpu_count() // 2`, which assumes two
hardware threads per core. On a 2-vCPU VM with one thread per core that picks 1 thread and
gives up ~25% of the speed (106-110 tok/s with 1 thread against 134-137 with 2 on the
embedded model). So count the cores in the CPU affinity mask (a container or `taskset` may
allow fewer than the machine has), and collapse SMT siblings to one per physical core when
the kernel says which they are.

Then leave out the cores other work keeps busy *right now*, when the daemon starts. ggml's
threads wait for each other at every step of a token, so one of them sharing a core with
another busy process stalls them all: with one of the 2 cores busy, 2 threads made 12 tok/s
where 1 thread made 95 (benchmarks/bench_local.py). "Right now" is a 0.1 s sample of
/proc/stat, not the 1-minute load average: the load average still counts work that ended
seconds ago (a benchmark's previous step, a build), and would give an idle machine one
thread. An idle machine keeps every core. An explicit count (EVALCTL_LOCAL_THREADS,
`local_threads`, `--threads`) is used as given.

Prompt evaluation (`n_threads_batch`) has its own setting; unset, it takes generation's
count (the engine's `n_threads_batch or threads`), as measured (docs/hardware.md, "Threads"):
on the 2-core machine 2 threads were best for prompts (282 tok/s against 145 at 1) as for
generation (122 against 75). A 16-core Xeon once ran a prompt-heavy suite faster at 2
threads than at 16, which suggested fewer threads for prompts; that run predates the
engine's one calling thread (evalctl.server.native_thread), when every thread that had
called llama.cpp kept its own idle team of OpenMP workers, a cost that grows with the
count. It is to be measured again there with `benchmarks/bench_threads.py` before it sets
a default.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

SYSFS_CPU = Path("/sys/devices/system/cpu")
PROC_STAT = Path("/proc/stat")
# Long enough to see a busy process (the kernel counts in 10 ms ticks), short enough not to
# weigh on the daemon's cold start.
BUSY_SAMPLE_S = 0.1


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


def _cpu_times(stat: Path) -> tuple[int, int] | None:
    """(idle, total) jiffies summed over all CPUs, from the first line of /proc/stat."""
    try:
        fields = stat.read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu" or len(fields) < 5:
        return None
    values = [int(v) for v in fields[1:]]
    # idle + iowait: time no process wanted the CPU.
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return idle, sum(values)


def busy_cores(stat: Path = PROC_STAT, sample_s: float = BUSY_SAMPLE_S) -> int:
    """Cores other work keeps busy right now (rounded to the nearest core), 0 when unknown."""
    before = _cpu_times(stat)
    if before is None:
        return 0
    time.sleep(sample_s)
    after = _cpu_times(stat)
    if after is None:
        return 0
    idle, total = after[0] - before[0], after[1] - before[1]
    if total <= 0:
        return 0
    busy_fraction = 1 - idle / total
    return round(busy_fraction * (os.cpu_count() or 1))


def available_cores() -> int:
    """Physical cores among the allowed CPUs; the allowed CPUs when that is unknown."""
    cpus = allowed_cpus()
    return max(1, physical_cores(cpus) or len(cpus))


def default_threads() -> int:
    """The available cores less the busy ones, at least 1."""
    return max(1, available_cores() - busy_cores())
