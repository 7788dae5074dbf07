"""What `evalctl providers` says about the local engine here: its backend and GPU layers,
and whether it can run (the local provider's `unavailable_reason` and `check_given`).

Known without starting anything: llama.cpp's build (its backends, and whether it can offload
to a GPU) and the `gpu_layers` setting. The layers really offloaded depend on the model, so
they are known only from a daemon already serving it; one that runs is asked, none is
started for a listing.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalctl.config import Settings
from evalctl.errors import EvalctlError
from evalctl.lifecycle.manager import DaemonManager, DaemonSpec, DaemonStatus
from evalctl.modelfiles.manifest import describe_model_problem, load_manifest, resolve
from evalctl.providers.base import missing_package
from evalctl.providers.options import ProviderOptions
from evalctl.server import hardware

GPU_LAYERS_ENV = "EVALCTL_LOCAL_GPU_LAYERS"


def unavailable_reason(options: ProviderOptions) -> str | None:
    """Why the local engine cannot run here (llama.cpp missing, no model file), or None."""
    missing = missing_package("llama_cpp", "run `make setup`")
    if missing:
        return missing
    return describe_model_problem(options.model or options.settings.local_model)


def check_given(options: ProviderOptions) -> None:
    """A --model (or `local_model`) that is neither a manifest name nor a file is bad input."""
    model = options.model or options.settings.local_model
    if model is not None and load_manifest().get(model) is None:
        resolve(model)  # raises BadInputError naming the path that is not a file


def describe(
    settings: Settings,
    env: Mapping[str, str],
    model: str | None = None,
    extra: Mapping[str, str] | None = None,
) -> str:
    """`backend CUDA, CPU; 31 layers offloaded (daemon pid 4242)` and the like."""
    # llama_cpp before anything imports grpc (the status query below): evalctl/server/
    # __main__.py says why.
    backends = hardware.backends(hardware.system_info())
    build = f"backend {', '.join(backends) or 'unknown'}"
    status = _running_daemon(settings, model)
    if status is not None:
        running = hardware.backends(status.system_info) or backends
        return (
            f"backend {', '.join(running)}; {status.n_gpu_layers} layers offloaded "
            f"(daemon pid {status.pid})"
        )
    if not hardware.gpu_offload_supported():
        return f"{build}; no GPU offload in this build"
    requested = (extra or {}).get("gpu_layers") or env.get(GPU_LAYERS_ENV)
    if requested is None and settings.local_gpu_layers is not None:
        requested = str(settings.local_gpu_layers)
    if requested is None:
        return f"{build}; offloads every layer (default)"
    try:
        layers = int(requested)
    except ValueError:
        # A run refuses it as bad input; the listing only says so.
        return f"{build}; gpu_layers {requested!r} is not a layer count"
    if layers == -1:
        return f"{build}; offloads every layer (gpu_layers -1)"
    return f"{build}; offloads {layers} layers (gpu_layers)"


def _running_daemon(settings: Settings, model: str | None) -> DaemonStatus | None:
    """The status of the daemon serving the model, if one runs. A GGUF outside the manifest
    has no known hash, and hashing gigabytes for a listing is not worth it: None."""
    try:
        resolved = resolve(model or settings.local_model)
    except EvalctlError:
        return None
    if resolved.expected_sha256 is None:
        return None
    spec = DaemonSpec(resolved.path, resolved.name, resolved.expected_sha256)
    manager = DaemonManager(settings, spec)
    try:
        status = manager.status()
    except EvalctlError:
        return None
    finally:
        manager.close()
    return status if status.running and status.ready else None
