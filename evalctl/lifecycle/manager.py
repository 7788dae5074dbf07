"""Start, find, watch and stop the daemon serving one model (`ensure_running`, `stop`).

One daemon per model hash: whoever takes the flock spawns it and hands it the locked file
descriptor, so there is no moment at which the lock is free while a daemon starts. Anyone
else finds the lock held and waits for readiness on the same socket, which is how two
evalctl processes share a daemon. If the holder dies while starting, the lock frees and
the next waiter spawns instead.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import subprocess
import sys
import sysconfig
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from evalctl import flock
from evalctl.config import Settings
from evalctl.errors import ProviderError
from evalctl.lifecycle import native, procs
from evalctl.lifecycle.client import DaemonClient
from evalctl.lifecycle.native import signal_name
from evalctl.lifecycle.paths import DaemonPaths, daemon_paths
from evalctl.server.options import (
    DEFAULT_GRACE_S,
    DEFAULT_IDLE_TIMEOUT_S,
    DEFAULT_N_CTX,
    DaemonOptions,
)

START_TIMEOUT_S = 60.0
POLL_S = 0.02
RPC_TIMEOUT_S = 2.0
SIGTERM_WAIT_S = 5.0
SIGKILL_WAIT_S = 5.0
LOG_ROTATE_BYTES = 10 * 1024 * 1024
LOG_TAIL_LINES = 15


class DaemonStartError(ProviderError):
    """The daemon exited or hung while starting; the message quotes its log."""


@dataclass(frozen=True)
class DaemonSpec:
    model_path: Path
    model_name: str
    model_sha256: str
    n_ctx: int = DEFAULT_N_CTX
    n_threads: int | None = None
    # Prompt evaluation threads; None: as many as generation.
    n_threads_batch: int | None = None
    # None: the daemon decides (every layer where its build can offload, else none).
    n_gpu_layers: int | None = None
    # Requests the daemon serves at once (its slots).
    parallel: int = 1
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    grace_s: float = DEFAULT_GRACE_S


class DaemonStatus(BaseModel):
    """What `evalctl server status` shows; `running` without `ready` means loading or
    stopping."""

    running: bool
    ready: bool = False
    pid: int | None = None
    socket: str
    log: str
    model_name: str = ""
    model_sha256: str = ""
    model_path: str = ""
    model_size_bytes: int = 0
    n_ctx: int = 0
    n_threads: int = 0
    n_threads_batch: int = 0
    # Requests served at once.
    n_parallel: int = 0
    backend: str = ""
    backend_version: str = ""
    version: str = ""
    uptime_s: float = 0.0
    requests_served: int = 0
    in_flight: int = 0
    idle_timeout_s: float = 0.0
    # llama.cpp's build (backends, CPU features), the CPU, and how the model runs on them.
    system_info: str = ""
    cpu_model: str = ""
    n_batch: int = 0
    n_gpu_layers: int = 0
    gpu_offload_supported: bool = False
    # Measured by the daemon (warm-up, then recent requests); 0 when unknown.
    gen_tokens_per_s: float = 0.0
    prompt_tokens_per_s: float = 0.0
    # The model an Embed loaded (empty until one was asked for).
    embedding_model_name: str = ""
    embedding_model_sha256: str = ""


StopHow = Literal["not_running", "shutdown", "sigterm", "sigkill", "failed"]


class StopResult(BaseModel):
    stopped: bool
    how: StopHow
    pid: int | None = None
    seconds: float = 0.0


def daemon_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The daemon's environment: this process's, with this very evalctl importable.

    From a checkout that is not installed, the checkout goes first on PYTHONPATH. An
    installed evalctl is found by the same interpreter anyway, and putting its
    site-packages first would shadow what the user's PYTHONPATH puts first on purpose,
    such as a llama.cpp built for another instruction set (docs/hardware.md).
    """
    env = dict(environ)
    package_root = Path(__file__).resolve().parents[2]
    installed = {Path(sysconfig.get_paths()[key]).resolve() for key in ("purelib", "platlib")}
    if package_root not in installed:
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(package_root), env.get("PYTHONPATH")) if p
        )
    return env


class DaemonManager:
    def __init__(
        self,
        settings: Settings,
        spec: DaemonSpec,
        *,
        start_timeout_s: float = START_TIMEOUT_S,
        before_spawn: Callable[[], None] | None = None,
    ):
        self.spec = spec
        self.paths: DaemonPaths = daemon_paths(settings, spec.model_sha256)
        self.start_timeout_s = start_timeout_s
        # Runs (holding the lock) right before a daemon is spawned, e.g. to re-verify the
        # model file; an exception aborts the spawn.
        self._before_spawn = before_spawn
        self._proc: subprocess.Popen[bytes] | None = None
        self._client: DaemonClient | None = None
        self._client_lock = threading.Lock()

    # -- connection -------------------------------------------------------------------

    def client(self) -> DaemonClient:
        with self._client_lock:
            if self._client is None:
                self._client = DaemonClient(self.paths.socket)
            return self._client

    def drop_client(self) -> None:
        """Forget the channel (after the daemon went away); the next call makes a new one.

        The channel is released rather than closed: another thread may still be in an RPC
        on it, and closing would turn that RPC into a spurious CANCELLED. The last user
        drops the last reference and gRPC closes it then."""
        with self._client_lock:
            self._client = None

    def close(self) -> None:
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()

    # -- queries ----------------------------------------------------------------------

    def status(self, *, timeout: float = RPC_TIMEOUT_S) -> DaemonStatus:
        """The daemon's own report if it answers; else what the lock file says."""
        reply = self._query_status(timeout)
        if reply is not None:
            return self._from_reply(reply)
        locked = flock.is_locked(self.paths.lock)
        pid = flock.read_pid(self.paths.lock) if locked else None
        return DaemonStatus(
            running=locked and procs.alive(pid, self._proc),
            pid=pid,
            socket=str(self.paths.socket),
            log=str(self.paths.log),
        )

    @property
    def pid(self) -> int | None:
        """The daemon's pid, if one is running for this model."""
        return self.status().pid

    def owner_alive(self, pid: int | None) -> bool:
        return procs.alive(pid, self._proc)

    def wait_gone(self, pid: int, timeout: float) -> bool:
        return procs.wait_gone(pid, timeout, self._proc)

    # -- start ------------------------------------------------------------------------

    def ensure_running(self) -> DaemonStatus:
        """Return the status of a ready daemon, spawning one if none holds the lock."""
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            reply = self._query_status(RPC_TIMEOUT_S)
            if reply is not None and reply.ready:
                return self._from_reply(reply)
            fd = flock.try_lock(self.paths.lock)
            if fd is not None:
                try:
                    if self._before_spawn is not None:
                        self._before_spawn()
                    self._remove_stale_socket()
                    proc, log_offsets = self._spawn(fd)
                finally:
                    os.close(fd)  # the child keeps its inherited copy, and with it the lock
                return self._wait_ready(proc, log_offsets, deadline)
            # Someone else holds the lock: a daemon is starting, serving or stopping.
            if time.monotonic() >= deadline:
                owner = flock.read_pid(self.paths.lock)
                raise DaemonStartError(
                    f"the daemon (pid {owner}) holding {self.paths.lock} did not become ready "
                    f"within {self.start_timeout_s:.0f}s",
                    hint=f"see its log {self.paths.log}; `evalctl server stop` kills it",
                )
            time.sleep(0.05)

    def _spawn(self, lock_fd: int) -> tuple[subprocess.Popen[bytes], tuple[int, int]]:
        spec = self.spec
        for path in (self.paths.log, self.paths.stderr):
            _rotate(path)
        offsets = (_size(self.paths.log), _size(self.paths.stderr))
        options = DaemonOptions(
            model_path=spec.model_path,
            socket_path=self.paths.socket,
            model_name=spec.model_name,
            model_sha256=spec.model_sha256,
            idle_timeout_s=spec.idle_timeout_s,
            grace_s=spec.grace_s,
            n_ctx=spec.n_ctx,
            n_threads=spec.n_threads,
            n_threads_batch=spec.n_threads_batch,
            n_gpu_layers=spec.n_gpu_layers,
            parallel=spec.parallel,
            log_path=self.paths.log,
            lock_fd=lock_fd,
        )
        env = daemon_environment(os.environ)
        err_fd = os.open(self.paths.stderr, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            # Own session: it outlives this process and the terminal's Ctrl-C. exec() of
            # a fresh interpreter, because gRPC does not survive a bare fork().
            proc = subprocess.Popen(
                [sys.executable, "-m", "evalctl.server", *options.to_argv()],
                stdin=subprocess.DEVNULL,
                stdout=err_fd,
                stderr=err_fd,
                pass_fds=(lock_fd,),
                start_new_session=True,
                env=env,
            )
        finally:
            os.close(err_fd)
        self._proc = proc
        return proc, offsets

    def _wait_ready(
        self, proc: subprocess.Popen[bytes], offsets: tuple[int, int], deadline: float
    ) -> DaemonStatus:
        client = self.client()
        while True:
            code = proc.poll()
            if code is not None and code < 0:
                raise self._crashed_at_start(-code, offsets)
            if code is not None:
                # The daemon's own last word (e.g. "cannot load model <file>: ...") says it
                # in one line; without one, quote what it wrote.
                fatal = self._fatal_error(offsets[0])
                raise DaemonStartError(
                    f"the inference daemon exited with status {code} while starting: {fatal}"
                    if fatal
                    else f"the inference daemon exited with status {code} while starting:\n"
                    + self._log_tail(offsets),
                    hint=f"full logs: {self.paths.log} and {self.paths.stderr}",
                )
            if self.paths.socket.exists():
                reply = self._ready_reply(client)
                if reply is not None:
                    return self._from_reply(reply)
            if time.monotonic() >= deadline:
                self._kill(proc.pid)
                raise DaemonStartError(
                    f"the inference daemon did not become ready within "
                    f"{self.start_timeout_s:.0f}s and was killed:\n" + self._log_tail(offsets),
                    hint=f"full logs: {self.paths.log} and {self.paths.stderr}",
                )
            time.sleep(POLL_S)

    def _crashed_at_start(self, signum: int, offsets: tuple[int, int]) -> DaemonStartError:
        """A daemon killed by a signal while starting: a native crash (SIGSEGV, SIGABRT,
        SIGILL) in llama.cpp or gRPC, or a kill from outside; named, with its logs."""
        name = signal_name(signum)
        in_native_code = signum in (signal.SIGSEGV, signal.SIGABRT, signal.SIGILL, signal.SIGBUS)
        what = "crashed (a native crash in llama.cpp or gRPC)" if in_native_code else "was killed"
        return DaemonStartError(
            f"the inference daemon {what} with {name} while starting; its logs: "
            f"{self.paths.stderr} and {self.paths.log}\n" + self._log_tail(offsets),
            hint=native.crash_hint(signum),
        )

    def _ready_reply(self, client: DaemonClient) -> Any:
        import grpc

        try:
            # Health says SERVING only after the model loaded; status confirms it is ours.
            if client.health(timeout=RPC_TIMEOUT_S) != "SERVING":
                return None
            reply = client.status(timeout=RPC_TIMEOUT_S)
        except grpc.RpcError:
            return None
        return reply if reply.ready else None

    # -- stop -------------------------------------------------------------------------

    def stop(self, *, grace_s: float | None = None) -> StopResult:
        """Shutdown RPC, then SIGTERM, then SIGKILL, each bounded; then tidy stale files."""
        import grpc

        started = time.monotonic()
        grace = self.spec.grace_s if grace_s is None else grace_s
        pid = self.status().pid if flock.is_locked(self.paths.lock) else None
        how: StopHow = "not_running"
        if pid is not None and procs.alive(pid, self._proc):
            how = "failed"
            try:
                self.client().shutdown(grace_s=grace, timeout=RPC_TIMEOUT_S)
                if procs.wait_gone(pid, grace + SIGTERM_WAIT_S, self._proc):
                    how = "shutdown"
            except grpc.RpcError:
                pass
            if (
                how == "failed"
                and procs.signal_pid(pid, signal.SIGTERM)
                and procs.wait_gone(pid, grace + SIGTERM_WAIT_S, self._proc)
            ):
                how = "sigterm"
            if (
                how == "failed"
                and procs.signal_pid(pid, signal.SIGKILL)
                and procs.wait_gone(pid, SIGKILL_WAIT_S, self._proc)
            ):
                how = "sigkill"
        self.drop_client()
        self._tidy()
        return StopResult(
            stopped=how != "failed",
            how=how,
            pid=pid,
            seconds=round(time.monotonic() - started, 3),
        )

    def _kill(self, pid: int) -> None:
        procs.signal_pid(pid, signal.SIGKILL)
        procs.wait_gone(pid, SIGKILL_WAIT_S, self._proc)
        self._tidy()

    def _tidy(self) -> None:
        """Remove a socket and lock file left by a daemon that died without cleaning up."""
        fd = flock.try_lock(self.paths.lock)
        if fd is None:
            return
        self._remove_stale_socket()
        flock.release(fd, self.paths.lock)

    def _remove_stale_socket(self) -> None:
        # Only called while holding the lock: no live daemon owns this socket.
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(os.lstat(self.paths.socket).st_mode):
                self.paths.socket.unlink()

    # -- helpers ----------------------------------------------------------------------

    def _query_status(self, timeout: float) -> Any:
        import grpc

        if not self.paths.socket.exists():
            return None
        try:
            return self.client().status(timeout=timeout)
        except grpc.RpcError:
            self.drop_client()
            return None

    def _from_reply(self, r: Any) -> DaemonStatus:
        return DaemonStatus(
            running=True,
            ready=bool(r.ready),
            pid=int(r.pid) or None,
            socket=str(self.paths.socket),
            log=str(self.paths.log),
            model_name=str(r.model_name),
            model_sha256=str(r.model_sha256),
            model_path=str(r.model_path),
            model_size_bytes=int(r.model_size_bytes),
            n_ctx=int(r.n_ctx),
            n_threads=int(r.n_threads),
            # A daemon older than the field used n_threads for prompts too.
            n_threads_batch=int(r.n_threads_batch) or int(r.n_threads),
            # A daemon older than the field served one request at a time.
            n_parallel=int(r.n_parallel) or 1,
            backend=str(r.backend),
            backend_version=str(r.backend_version),
            version=str(r.version),
            uptime_s=float(r.uptime_s),
            requests_served=int(r.requests_served),
            in_flight=int(r.in_flight),
            idle_timeout_s=float(r.idle_timeout_s),
            system_info=str(r.system_info),
            cpu_model=str(r.cpu_model),
            n_batch=int(r.n_batch),
            n_gpu_layers=int(r.n_gpu_layers),
            gpu_offload_supported=bool(r.gpu_offload_supported),
            gen_tokens_per_s=float(r.gen_tokens_per_s),
            prompt_tokens_per_s=float(r.prompt_tokens_per_s),
            embedding_model_name=str(r.embedding_model_name),
            embedding_model_sha256=str(r.embedding_model_sha256),
        )

    def _fatal_error(self, offset: int) -> str | None:
        """The `error` of the last `fatal` event this spawn logged, if any."""
        for line in reversed(_read_from(self.paths.log, offset).splitlines()):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict) and event.get("event") == "fatal" and event.get("error"):
                return str(event["error"])
        return None

    def _log_tail(self, offsets: tuple[int, int]) -> str:
        """What this spawn wrote to its logs (the files hold earlier daemons' output too)."""
        parts = []
        for path, offset in zip((self.paths.log, self.paths.stderr), offsets, strict=True):
            lines = _read_from(path, offset).splitlines()[-LOG_TAIL_LINES:]
            if lines:
                parts.append(f"--- {path.name} ---\n" + "\n".join(lines))
        return "\n".join(parts) or "(the daemon wrote nothing to its logs)"


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def _read_from(path: Path, offset: int) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            return fh.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


def _rotate(path: Path) -> None:
    # Soak tests restart the daemon many times; keep one previous generation of each log.
    if _size(path) > LOG_ROTATE_BYTES:
        os.replace(path, path.with_name(path.name + ".1"))
