"""The platform a run's replies came from, and what differs between two of them.

Greedy decoding is deterministic on one platform only: llama.cpp built for another
instruction set (AVX2 or not, AVX-512, NEON), another backend (CUDA, Metal), or another
offload sums floating point in another order, and a small model's answer can change with
it. A run records its platform, a baseline keeps the one it was recorded on, and `compare`
says what differs, so a changed verdict can be put down to the machine where it belongs.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evalctl.server import hardware


class Platform(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str
    model: str
    # The local engine: llama-cpp-python's version and llama.cpp's build, verbatim
    # (`llama_print_system_info()`) and parsed into its backends and CPU features.
    llama_cpp: str | None = None
    system_info: str | None = None
    backends: list[str] = Field(default_factory=list)
    cpu_features: list[str] = Field(default_factory=list)
    cpu: str | None = None
    threads: int | None = None
    # Prompt evaluation's threads (`threads` counts generation's).
    threads_batch: int | None = None
    # Requests the local daemon served at once, each on its own context (`threads` each).
    parallel: int | None = None
    batch_size: int | None = None
    gpu_layers: int | None = None
    # Cloud APIs: the backend fingerprints the API reported over the run (OpenAI's
    # `system_fingerprint`), sorted; empty where the API gives none.
    system_fingerprints: list[str] = Field(default_factory=list)


def parse_system_info(text: str) -> tuple[list[str], list[str]]:
    """(backends, CPU features) from `llama_print_system_info()`, which reads like
    `CUDA : ARCHS = 900 | USE_GRAPHS = 1 | CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | ...`:
    a backend opens with `NAME : `, and a CPU feature is a `KEY = 1` of the CPU backend."""
    return hardware.backends(text), hardware.cpu_features(text)


# Compared field by field; `system_info` only where its parsed parts agree (it would say
# the same thing again, at length).
_COMPARED = (
    "provider",
    "model",
    "llama_cpp",
    "backends",
    "cpu_features",
    "cpu",
    "threads",
    "threads_batch",
    "parallel",
    "batch_size",
    "gpu_layers",
    "system_fingerprints",
)


def _show(value: Any) -> str:
    if value is None:
        return "unknown"
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "none"
    return str(value)


def platform_diff(before: Platform, after: Platform) -> list[str]:
    """What differs from `before` to `after`, one `"field: a -> b"` per field; empty when
    they match. A field one side did not record is not a difference. CPU features show
    only those one side lacks (`cpu_features: AVX2,FMA -> none`)."""
    changes: list[str] = []
    for field in _COMPARED:
        a, b = getattr(before, field), getattr(after, field)
        if a in (None, []) or b in (None, []) or a == b:
            continue
        if field == "cpu_features":
            # Only the features one side has: the shared dozen would drown them.
            a, b = [f for f in a if f not in b], [f for f in b if f not in a]
        changes.append(f"{field}: {_show(a)} -> {_show(b)}")
    if (
        not changes
        and before.system_info
        and after.system_info
        and before.system_info != after.system_info
    ):
        changes.append(f"system_info: {before.system_info} -> {after.system_info}")
    return changes


def common_platform(platforms: list[Platform | None]) -> Platform | None:
    """What the shards of one run share (`evalctl merge`): shards may run on different
    machines, so a field where they differ is left unknown rather than taken from one."""
    known = [p for p in platforms if p is not None]
    if not known or len(known) < len(platforms):
        return None
    first = known[0]
    update: dict[str, Any] = {}
    for field in Platform.model_fields:
        if field in ("provider", "model"):
            continue
        if any(getattr(p, field) != getattr(first, field) for p in known[1:]):
            update[field] = [] if isinstance(getattr(first, field), list) else None
    return first.model_copy(update=update)


def platform_of(provider: str, model: str, info: dict[str, Any]) -> Platform:
    """The record from what a provider reported (`evalctl.providers.base.provider_platform`),
    with llama.cpp's system info parsed into backends and CPU features."""
    record = Platform(provider=provider, model=model, **info)
    if record.system_info and not record.backends:
        backends, features = parse_system_info(record.system_info)
        record = record.model_copy(update={"backends": backends, "cpu_features": features})
    return record
