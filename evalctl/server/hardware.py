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


def backends(info: str) -> list[str]:
    """The backends named in a `system_info()` text, in its order: each opens an entry with
    `NAME : ` (`CUDA : ARCHS = 900 | ... | CPU : SSE3 = 1 | ...` gives CUDA, CPU)."""
    names: list[str] = []
    for item in info.split("|"):
        name, sep, _ = item.partition(" : ")
        name = name.strip()
        if sep and name and name not in names:
            names.append(name)
    return names


def cpu_features(info: str) -> list[str]:
    """The CPU features a `system_info()` text says this build uses: the `KEY = 1` entries of
    its CPU backend (`CPU : SSE3 = 1 | AVX2 = 1 | ...`), in its order."""
    features: list[str] = []
    current = ""
    for raw in info.split("|"):
        item = raw.strip()
        name, sep, rest = item.partition(" : ")
        if sep:
            current, item = name.strip(), rest.strip()
        key, eq, value = (part.strip() for part in item.partition("="))
        if eq and current.upper() == "CPU" and value == "1":
            features.append(key)
    return features


def gpu_offload_supported() -> bool:
    import llama_cpp

    return bool(llama_cpp.llama_supports_gpu_offload())


def default_gpu_layers(requested: int | None) -> int:
    """The layers to ask llama.cpp to offload: as requested, else every one (-1) where the
    build can offload (CUDA, Metal...), else none. A CPU-only build ignores the number, so
    the default costs nothing there."""
    if requested is not None:
        return requested
    return -1 if gpu_offload_supported() else 0


def offloaded_layers(requested: int, n_layer: int, supported: bool) -> int:
    """How many layers llama.cpp really puts on the GPU: none on a build that cannot
    offload; of a model's `n_layer` blocks plus its output layer, `requested` (-1: all)."""
    if not supported or requested == 0:
        return 0
    total = n_layer + 1
    return total if requested < 0 else min(requested, total)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()
