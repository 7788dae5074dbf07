"""The daemon's options and their command line, defined once.

The lifecycle manager builds the argv with `to_argv()` and `python -m evalctl.server`
parses it with `parse_argv()`, so the two sides cannot disagree about a flag. Parsing uses
argparse rather than Typer: the daemon's cold start is measured, and this keeps it lean.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from pathlib import Path

# The service name clients ask grpc.health.v1.Health about.
SERVICE_NAME = "evalctl.inference.v1.InferenceService"
DEFAULT_IDLE_TIMEOUT_S = 300.0
DEFAULT_GRACE_S = 10.0
DEFAULT_N_CTX = 4096
DEFAULT_MAX_TOKENS = 512

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration(text: str) -> float:
    """'5m', '30s', '1.5h', '250ms' or plain seconds; '0' means never."""
    match = _DURATION.match(text)
    if match is None:
        raise ValueError(f"invalid duration {text!r}: use e.g. 30s, 5m, 1h or 0 for never")
    return float(match.group(1)) * _UNIT_S[match.group(2)]


@dataclass(frozen=True)
class DaemonOptions:
    model_path: Path
    socket_path: Path
    # Shown in status and responses; defaults to the file's stem.
    model_name: str = ""
    # Hex SHA256 verified by the caller; the daemon hashes the file itself when absent.
    model_sha256: str = ""
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    grace_s: float = DEFAULT_GRACE_S
    n_ctx: int = DEFAULT_N_CTX
    n_threads: int | None = None
    # Threads for prompt evaluation (llama.cpp's n_threads_batch); None: as many as
    # generation gets (`n_threads` or its default).
    n_threads_batch: int | None = None
    # Layers to offload to a GPU: -1 every one, 0 none; None: every one when this
    # llama.cpp build can offload, else none (evalctl.server.hardware.default_gpu_layers).
    n_gpu_layers: int | None = None
    # Requests served at once, each on a llama.cpp context of its own (evalctl.server.slots).
    parallel: int = 1
    log_path: Path | None = None
    # An inherited file descriptor already holding the flock (set by the lifecycle
    # manager, so no other daemon can slip in between its check and our start).
    lock_fd: int | None = None

    @property
    def lock_path(self) -> Path:
        return lock_path_for(self.socket_path)

    def to_argv(self) -> list[str]:
        argv = [
            "--model",
            str(self.model_path),
            "--socket",
            str(self.socket_path),
            "--idle-timeout",
            f"{self.idle_timeout_s:g}s",
            "--grace",
            f"{self.grace_s:g}s",
            "--n-ctx",
            str(self.n_ctx),
            "--parallel",
            str(self.parallel),
        ]
        optional = {
            "--model-name": self.model_name,
            "--model-sha256": self.model_sha256,
            "--threads": self.n_threads,
            "--threads-batch": self.n_threads_batch,
            "--gpu-layers": self.n_gpu_layers,
            "--log": self.log_path,
            "--lock-fd": self.lock_fd,
        }
        for flag, value in optional.items():
            if value not in (None, ""):
                argv += [flag, str(value)]
        return argv


def lock_path_for(socket_path: Path) -> Path:
    """The flock file that guards a socket path: beside it, same stem."""
    return socket_path.with_suffix(".lock")


def _duration_arg(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of 1 or more, not {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m evalctl.server", description="Serve one GGUF model over gRPC."
    )
    p.add_argument("--model", required=True, type=Path, help="path to the .gguf file")
    p.add_argument("--socket", required=True, type=Path, help="Unix socket to listen on")
    p.add_argument("--idle-timeout", type=_duration_arg, default=DEFAULT_IDLE_TIMEOUT_S)
    p.add_argument("--grace", type=_duration_arg, default=DEFAULT_GRACE_S)
    p.add_argument("--n-ctx", type=int, default=DEFAULT_N_CTX)
    p.add_argument(
        "--threads", type=int, default=None, help="generation threads (per parallel slot)"
    )
    p.add_argument(
        "--parallel", type=_positive_int, default=1, help="requests served at once (slots)"
    )
    p.add_argument(
        "--threads-batch", type=int, default=None, help="prompt threads (default: --threads)"
    )
    p.add_argument("--gpu-layers", type=int, default=None, help="-1: all; default: all if offload")
    p.add_argument("--model-name", default="")
    p.add_argument("--model-sha256", default="")
    p.add_argument("--log", type=Path, default=None, help="JSON-lines log file")
    p.add_argument("--lock-fd", type=int, default=None, help=argparse.SUPPRESS)
    return p


def parse_argv(argv: list[str]) -> DaemonOptions:
    ns = build_parser().parse_args(argv)
    return DaemonOptions(
        model_path=ns.model,
        socket_path=ns.socket,
        model_name=ns.model_name,
        model_sha256=ns.model_sha256,
        idle_timeout_s=ns.idle_timeout,
        grace_s=ns.grace,
        n_ctx=ns.n_ctx,
        n_threads=ns.threads,
        n_threads_batch=ns.threads_batch,
        n_gpu_layers=ns.gpu_layers,
        parallel=ns.parallel,
        log_path=ns.log,
        lock_fd=ns.lock_fd,
    )
