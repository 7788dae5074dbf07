"""What the daemon runs on, for the results' platform record: llama.cpp's build and the CPU.

Greedy output is deterministic per platform only (another instruction set or backend sums
floating point in another order), so a run records what produced it.
"""

from __future__ import annotations

import platform


def system_info() -> str:
    """`llama_print_system_info()`: the backends (CPU, CUDA, Metal) and CPU features
    (AVX2, AVX512, NEON...) this llama.cpp was built with."""
    import llama_cpp

    raw = llama_cpp.llama_print_system_info()
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else str(raw)
    return text.strip().rstrip("|").strip()


def gpu_offload_supported() -> bool:
    import llama_cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
