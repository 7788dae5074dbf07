"""The daemon's life: lock, bind, load, serve, and leave no files behind.

Order matters and each step has a reason:
1. the flock first (gRPC would silently steal an existing socket);
2. bind the socket under umask 0o177 so it is born 0600, then verify with os.stat;
3. start serving with health NOT_SERVING, so clients can tell "loading" from "absent";
4. load the model, then health SERVING;
5. on SIGTERM/SIGINT, the Shutdown RPC or the idle timeout: health NOT_SERVING, let
   in-flight requests finish within the grace period, then delete the socket and the lock
   file (in that order, while still holding the lock).
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import threading
import time
import traceback
from concurrent import futures
from pathlib import Path
from types import FrameType
from typing import Any

from evalctl import flock
from evalctl.errors import EvalctlError, ExitCode
from evalctl.server import hardware
from evalctl.server.engine import Engine, EngineConfig
from evalctl.server.jsonlog import JsonLog
from evalctl.server.options import SERVICE_NAME, DaemonOptions
from evalctl.server.servicer import DaemonState, InferenceServicer, ModelInfo

# RPC threads beyond the engine's slots, so that status and shutdown RPCs are answered while
# requests queue for the model; generation itself runs on the engine's slots.
SPARE_WORKERS = 8
# After the grace period, cancelled requests stop between two tokens; allow for that.
STOP_SLACK_S = 5.0
IDLE_POLL_S = 0.25


class DaemonError(EvalctlError):
    code = ExitCode.INFRA


class _Stop:
    """Why and how the daemon should stop; set from signal handlers, RPCs or the idle
    watch, and acted on by the main thread."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.reason = ""
        self.grace_s: float | None = None

    def request(self, reason: str, grace_s: float | None = None) -> None:
        if not self.event.is_set():
            self.reason = reason
            self.grace_s = grace_s
            self.event.set()


class Daemon:
    def __init__(self, options: DaemonOptions):
        self.options = options
        self.log = JsonLog(options.log_path)
        self.state = DaemonState()
        self.engine = Engine(
            EngineConfig(
                model_path=options.model_path,
                model_name=options.model_name or options.model_path.stem,
                n_ctx=options.n_ctx,
                n_threads=options.n_threads,
                n_threads_batch=options.n_threads_batch,
                n_gpu_layers=hardware.default_gpu_layers(options.n_gpu_layers),
                parallel=options.parallel,
            )
        )
        self._stop = _Stop()
        self._server: Any = None
        self._health: Any = None
        self._lock_fd: int | None = None
        self._bound = False

    def run(self) -> int:
        """Serve until stopped; the exit status (0, or 3 when the daemon could not run)."""
        self._install_signal_handlers()
        opts = self.options
        self.log.event(
            "starting",
            model=str(opts.model_path),
            socket=str(opts.socket_path),
            idle_timeout_s=opts.idle_timeout_s,
            n_ctx=opts.n_ctx,
            n_threads=opts.n_threads,
            n_threads_batch=opts.n_threads_batch,
            n_gpu_layers=self.engine.config.n_gpu_layers,
            parallel=opts.parallel,
        )
        try:
            self._take_lock()
            self._remove_stale_socket()
            self._start_server(self._model_info())
            self._load()
            self._wait_for_stop()
            self._drain()
            return 0
        except DaemonError as exc:
            self.log.event("fatal", error=exc.message)
            return int(ExitCode.INFRA)
        except Exception as exc:
            self.log.event("fatal", error=repr(exc), traceback=traceback.format_exc())
            return int(ExitCode.INFRA)
        finally:
            self._cleanup()

    # -- steps ------------------------------------------------------------------------

    def _install_signal_handlers(self) -> None:
        def on_signal(signum: int, _frame: FrameType | None) -> None:
            self._stop.request(signal.Signals(signum).name)

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)

    def _take_lock(self) -> None:
        opts = self.options
        if opts.lock_fd is not None:
            # Inherited from the lifecycle manager, which locked it before spawning us.
            self._lock_fd = opts.lock_fd
        else:
            opts.socket_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._lock_fd = flock.try_lock(opts.lock_path)
            if self._lock_fd is None:
                owner = flock.read_pid(opts.lock_path)
                raise DaemonError(
                    f"another daemon (pid {owner}) already holds {opts.lock_path}",
                    hint="stop it with `evalctl server stop`, or use another --socket",
                )
        flock.write_pid(self._lock_fd, os.getpid())

    def _remove_stale_socket(self) -> None:
        # We hold the lock, so any socket at the path belongs to a daemon that died.
        path = self.options.socket_path
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(mode):
            raise DaemonError(f"{path} exists and is not a socket; refusing to replace it")
        path.unlink()
        self.log.event("stale_socket_removed", socket=str(path))

    def _model_info(self) -> ModelInfo:
        opts = self.options
        try:
            size = opts.model_path.stat().st_size
        except OSError as exc:
            raise DaemonError(f"cannot read model {opts.model_path}: {exc}") from None
        sha = opts.model_sha256
        if not sha:
            from evalctl.modelfiles.manifest import sha256_file

            sha = sha256_file(opts.model_path)
        return ModelInfo(
            name=self.engine.config.model_name,
            sha256=sha,
            path=str(opts.model_path),
            size=size,
            socket_path=str(opts.socket_path),
            idle_timeout_s=opts.idle_timeout_s,
        )

    def _start_server(self, info: ModelInfo) -> None:
        import grpc
        from grpc_health.v1 import health, health_pb2, health_pb2_grpc

        from evalctl.server.gen import inference_pb2_grpc as pb_grpc

        server = grpc.server(
            futures.ThreadPoolExecutor(
                max_workers=SPARE_WORKERS + self.options.parallel, thread_name_prefix="rpc"
            )
        )
        self._server = server
        # HealthServicer starts out SERVING for "": say NOT_SERVING until the model loads.
        self._health = health.HealthServicer(experimental_non_blocking=True)
        for name in ("", SERVICE_NAME):
            self._health.set(name, health_pb2.HealthCheckResponse.NOT_SERVING)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, server)
        servicer = InferenceServicer(
            self.engine,
            self.state,
            info,
            self.log,
            lambda grace: self._stop.request("shutdown_rpc", grace),
        )
        pb_grpc.add_InferenceServiceServicer_to_server(servicer, server)
        self._bind(server)
        server.start()
        self.log.event("listening", socket=str(self.options.socket_path))

    def _bind(self, server: Any) -> None:
        path = self.options.socket_path
        # bind() creates the socket file with the process umask: set it so the socket is
        # born 0600 (a chmod afterwards would leave a window). No other thread creates
        # files yet, so the process-wide umask change is safe here.
        old = os.umask(0o177)
        try:
            port = server.add_insecure_port(f"unix:{path}")
        except RuntimeError as exc:
            raise DaemonError(f"cannot bind {path}: {exc}") from None
        finally:
            os.umask(old)
        if port == 0:
            raise DaemonError(f"cannot bind {path}")
        self._bound = True
        mode = os.stat(path).st_mode
        if not stat.S_ISSOCK(mode) or stat.S_IMODE(mode) != 0o600:
            raise DaemonError(f"{path} has mode {stat.S_IMODE(mode):o}, expected a 0600 socket")

    def _load(self) -> None:
        from grpc_health.v1 import health_pb2

        started = time.monotonic()
        try:
            self.engine.load()
        except (ValueError, RuntimeError, OSError) as exc:
            raise DaemonError(f"cannot load model {self.options.model_path}: {exc}") from None
        loaded = time.monotonic()
        # Before SERVING, so the first client already sees a measured speed (its cases'
        # time limits follow it: evalctl.runner.timelimit).
        self.engine.warm_up()
        self.state.ready = True
        # The idle clock starts when the daemon can serve: counted from process start, a
        # load slower than the idle timeout (a busy machine) would end the daemon the moment
        # it became ready, before its first client could reach it.
        self.state.touch()
        for name in ("", SERVICE_NAME):
            self._health.set(name, health_pb2.HealthCheckResponse.SERVING)
        self.log.event(
            "ready",
            load_ms=round((loaded - started) * 1000, 1),
            warm_up_ms=round((time.monotonic() - loaded) * 1000, 1),
            n_ctx=self.engine.n_ctx,
            n_threads=self.engine.n_threads,
            n_threads_batch=self.engine.n_threads_batch,
            n_gpu_layers=self.engine.gpu_layers,
            gen_tokens_per_s=round(self.engine.speed.gen_tokens_per_s, 2),
            prompt_tokens_per_s=round(self.engine.speed.prompt_tokens_per_s, 2),
        )

    def _wait_for_stop(self) -> None:
        idle_limit = self.options.idle_timeout_s
        while not self._stop.event.wait(IDLE_POLL_S):
            if idle_limit > 0 and self.state.idle_for() >= idle_limit:
                self._stop.request("idle_timeout")

    def _drain(self) -> None:
        grace = self._stop.grace_s or self.options.grace_s
        self.state.shutting_down = True
        self._health.enter_graceful_shutdown()
        self.log.event(
            "stopping", reason=self._stop.reason, grace_s=grace, in_flight=self.state.in_flight
        )
        # New RPCs are refused at once; in-flight ones get `grace` seconds, then cancelled.
        self._server.stop(grace).wait(grace + STOP_SLACK_S)
        self._server = None
        if not self.engine.close(timeout=STOP_SLACK_S):
            self.log.event("engine_busy_at_exit")

    def _cleanup(self) -> None:
        if self._server is not None:
            self._server.stop(0).wait(STOP_SLACK_S)
        if self._bound:
            with contextlib.suppress(FileNotFoundError):
                _unlink_socket(self.options.socket_path)
        if self._lock_fd is not None:
            flock.release(self._lock_fd, self.options.lock_path)
        self.log.event("exited", reason=self._stop.reason or "error")
        self.log.close()


def _unlink_socket(path: Path) -> None:
    if stat.S_ISSOCK(os.lstat(path).st_mode):
        path.unlink()
