"""What a native crash of llama.cpp says about the build and this CPU.

A SIGILL is an instruction the CPU refused. That is usually a build made on another machine
(AVX-512 code on a CPU without it), but not always: ggml's AMX path dies with SIGILL on the
very CPU it was built for (docs/hardware.md, "CPUs with AMX"). So the hint compares what the
build was compiled for (llama.cpp's `llama_print_system_info()`, read in a child process: a
build for another CPU may die just being loaded) with what this CPU has, and says which case
this is instead of guessing.
"""

from __future__ import annotations

import platform
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from evalctl.server.hardware import cpu_features

# llama.cpp's feature names (`CPU : AVX2 = 1 | ...`) and the /proc/cpuinfo flag each needs.
# Features of the build itself (OPENMP, REPACK, LLAMAFILE) need nothing of the CPU.
CPUINFO_FLAG = {
    "SSE3": "pni",
    "SSSE3": "ssse3",
    "AVX": "avx",
    "AVX_VNNI": "avx_vnni",
    "AVX2": "avx2",
    "F16C": "f16c",
    "FMA": "fma",
    "BMI2": "bmi2",
    "AVX512": "avx512f",
    "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni",
    "AVX512_BF16": "avx512_bf16",
    "AMX_INT8": "amx_int8",
}
# The flags worth printing when a build and a CPU are set side by side.
RELEVANT_FLAGS = (*CPUINFO_FLAG.values(), "avx512_fp16", "amx_tile", "amx_bf16")
PROBE = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode(errors='replace'))"
PROBE_TIMEOUT_S = 60.0
DOC = "docs/hardware.md, 'Native crashes and CPU features'"


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str] | None:
    """This CPU's flags (Linux's names), or None where /proc/cpuinfo is not there to read."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() == "flags":
            return frozenset(value.split())
    return None


@dataclass(frozen=True)
class BuildProbe:
    """llama.cpp's build as a child process saw it: its features, or the signal it died of."""

    features: tuple[str, ...] = ()
    died_of: int | None = None


def probe_build(python: str = sys.executable) -> BuildProbe | None:
    """Load llama_cpp (no model) in a child and read its build's CPU features; None when
    that could not be asked (not installed, a timeout)."""
    try:
        proc = subprocess.run(
            [python, "-c", PROBE],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode < 0:
        return BuildProbe(died_of=-proc.returncode)
    if proc.returncode != 0:
        return None
    return BuildProbe(features=tuple(cpu_features(proc.stdout)))


def _names(items: list[str]) -> str:
    return ", ".join(items) if items else "none"


def explain(build: BuildProbe | None, flags: frozenset[str] | None) -> str:
    """What a SIGILL of this build on this CPU means, and the way out."""
    machine = platform.machine()
    if build is None:
        return (
            "llama.cpp's build could not be read to compare it with this CPU; "
            f"rebuild it on this machine with `make setup` ({DOC})"
        )
    if build.died_of is not None:
        return (
            f"loading llama.cpp alone dies with {signal_name(build.died_of)}: it was built "
            "for another CPU. Rebuild it on this machine: `rm .venv/.llama-stamp && make setup` "
            f"({DOC})"
        )
    if flags is None:
        return f"this build uses {_names(list(build.features))}; {DOC} says what to check"
    needed = [f for f in build.features if f in CPUINFO_FLAG]
    missing = [f for f in needed if CPUINFO_FLAG[f] not in flags]
    has = sorted(f for f in flags if f in RELEVANT_FLAGS)
    if missing:
        return (
            f"llama.cpp was built for another CPU: it uses {_names(missing)}, which this "
            f"{machine} CPU lacks (it has {_names(has)}). Rebuild it here: "
            f"`rm .venv/.llama-stamp && make setup` ({DOC})"
        )
    if "AMX_INT8" in needed:
        return (
            "this build has ggml's AMX code, which dies with SIGILL on Intel CPUs with AMX "
            "(llama.cpp pull request #26954). `make setup` builds without it: "
            f"`rm .venv/.llama-stamp && make setup` ({DOC})"
        )
    return (
        f"not an instruction-set mismatch: every CPU feature this build uses "
        f"({_names(needed)}) is on this CPU (it has {_names(has)}). See {DOC}"
    )


def crash_hint(signum: int) -> str | None:
    """The hint for a daemon or embedder that died of `signum`, or None for other signals."""
    if signum != signal.SIGILL:
        return None
    return explain(probe_build(), cpu_flags())


def signal_name(signum: int) -> str:
    """SIGSEGV for 11; "signal 99" for a number Python does not name."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
