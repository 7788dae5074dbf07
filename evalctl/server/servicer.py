"""The gRPC InferenceService: translate RPCs to engine calls and engine errors to codes.

Malformed requests become INVALID_ARGUMENT and a conversation over the context window
OUT_OF_RANGE, so the client can tell the two apart (the daemon keeps serving either way); a
request that arrives while the model is still loading gets UNAVAILABLE.
Every RPC's cancellation (client gone, deadline, shutdown grace expired) reaches the
engine through `context.add_callback`, which stops generation between two tokens.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from evalctl.chat import CompletionRequest
from evalctl.server import convert, hardware
from evalctl.server.embedding import POOLING, EmbeddingModelRef, EmbedTimeoutError
from evalctl.server.engine import ContextOverflowError, Engine, EngineResult
from evalctl.server.gen import inference_pb2 as pb
from evalctl.server.gen import inference_pb2_grpc as pb_grpc
from evalctl.server.jsonlog import JsonLog
from evalctl.server.options import DEFAULT_MAX_TOKENS
from evalctl.server.prompt import BadRequestError

# Stop generating this long before the RPC deadline so the reply still reaches the client.
DEADLINE_MARGIN_S = 0.25


@dataclass(frozen=True)
class ModelInfo:
    name: str
    sha256: str
    path: str
    size: int
    socket_path: str
    idle_timeout_s: float


class DaemonState:
    """Readiness and activity, shared by the servicer and the daemon's idle watch."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.ready = False
        self.shutting_down = False
        self._lock = threading.Lock()
        self._in_flight = 0
        self._served = 0
        self._last_activity = time.monotonic()

    @contextmanager
    def activity(self, *, counts: bool) -> Iterator[None]:
        with self._lock:
            self._in_flight += 1
            self._last_activity = time.monotonic()
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1
                if counts:
                    self._served += 1
                self._last_activity = time.monotonic()

    def touch(self) -> None:
        with self._lock:
            self._last_activity = time.monotonic()

    def idle_for(self) -> float:
        with self._lock:
            return 0.0 if self._in_flight else time.monotonic() - self._last_activity

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def served(self) -> int:
        return self._served


class _Abort(Exception):
    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class InferenceServicer(pb_grpc.InferenceServiceServicer):  # type: ignore[misc]
    def __init__(
        self,
        engine: Engine,
        state: DaemonState,
        info: ModelInfo,
        log: JsonLog,
        request_shutdown: Callable[[float | None], None],
    ):
        self._engine = engine
        self._state = state
        self._info = info
        self._log = log
        self._request_shutdown = request_shutdown
        # Fixed for the life of the process: read once, not at every status probe.
        self._system_info = hardware.system_info()
        self._cpu_model = hardware.cpu_model()
        self._gpu_offload = hardware.gpu_offload_supported()

    # -- RPCs -------------------------------------------------------------------------

    def Complete(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            chat, deadline, cancel = self._prepare(request, context)
            with self._state.activity(counts=True):
                result = self._run(chat, deadline, cancel)
            return convert.response_to_pb(result.response, queue_ms=result.queue_ms)
        except _Abort as exc:
            context.abort(exc.code, exc.message)
            raise  # unreachable: abort raises

    def Embed(self, request: Any, context: grpc.ServicerContext) -> Any:
        try:
            if not self._state.ready:
                raise _Abort(grpc.StatusCode.UNAVAILABLE, "the model is still loading")
            model = self._embedding_model(request)
            deadline = self._deadline(request.timeout_s, context)
            cancel = threading.Event()
            context.add_callback(cancel.set)
            with self._state.activity(counts=True):
                return self._embed(request, model, deadline, cancel)
        except _Abort as exc:
            context.abort(exc.code, exc.message)
            raise  # unreachable: abort raises

    def GetStatus(self, request: Any, context: grpc.ServicerContext) -> Any:
        # A status probe counts as activity: the client checks readiness right before a
        # request, and the daemon must not idle out in between.
        self._state.touch()
        import llama_cpp

        from evalctl import __version__

        embedding = self._engine.embedding_model
        return pb.GetStatusResponse(
            ready=self._state.ready and not self._state.shutting_down,
            model_name=self._info.name,
            model_sha256=self._info.sha256,
            model_path=self._info.path,
            model_size_bytes=self._info.size,
            n_ctx=self._engine.n_ctx,
            backend="llama.cpp",
            backend_version=str(getattr(llama_cpp, "__version__", "")),
            version=__version__,
            pid=os.getpid(),
            uptime_s=time.monotonic() - self._state.started,
            requests_served=self._state.served,
            in_flight=self._state.in_flight,
            idle_timeout_s=self._info.idle_timeout_s,
            socket_path=self._info.socket_path,
            n_threads=self._engine.n_threads,
            n_threads_batch=self._engine.n_threads_batch,
            n_parallel=self._engine.parallel,
            embedding_model_name=embedding.name if embedding is not None else "",
            embedding_model_sha256=embedding.sha256 if embedding is not None else "",
            system_info=self._system_info,
            cpu_model=self._cpu_model,
            n_batch=self._engine.config.n_batch,
            n_gpu_layers=self._engine.gpu_layers,
            gpu_offload_supported=self._gpu_offload,
            gen_tokens_per_s=self._engine.speed.gen_tokens_per_s,
            prompt_tokens_per_s=self._engine.speed.prompt_tokens_per_s,
        )

    def Shutdown(self, request: Any, context: grpc.ServicerContext) -> Any:
        self._log.event("shutdown_requested", grace_s=request.grace_s or None)
        self._request_shutdown(request.grace_s or None)
        return pb.ShutdownResponse(accepted=True)

    # -- helpers ----------------------------------------------------------------------

    def _prepare(
        self, request: Any, context: grpc.ServicerContext
    ) -> tuple[CompletionRequest, float | None, threading.Event]:
        if not self._state.ready:
            raise _Abort(grpc.StatusCode.UNAVAILABLE, "the model is still loading")
        try:
            chat = convert.request_from_pb(request, default_max_tokens=DEFAULT_MAX_TOKENS)
        except convert.ConversionError as exc:
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
        deadline = self._deadline(request.timeout_s, context)
        cancel = threading.Event()
        context.add_callback(cancel.set)
        return chat, deadline, cancel

    @staticmethod
    def _deadline(timeout_s: float, context: grpc.ServicerContext) -> float | None:
        """The request's own limit or the RPC's deadline (less a margin), whichever is first."""
        limits = []
        if timeout_s > 0:
            limits.append(timeout_s)
        remaining = context.time_remaining()
        if remaining is not None:
            limits.append(max(0.0, remaining - DEADLINE_MARGIN_S))
        return time.monotonic() + min(limits) if limits else None

    def _embedding_model(self, request: Any) -> EmbeddingModelRef:
        if not request.model_path:
            return EmbeddingModelRef(Path(self._info.path), self._info.sha256, self._info.name)
        if not request.model_sha256:
            raise _Abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                "model_sha256 is required with model_path: the daemon loads only verified files",
            )
        path = Path(request.model_path)
        if path == Path(self._info.path) and request.model_sha256 == self._info.sha256:
            return EmbeddingModelRef(path, self._info.sha256, request.model_name or self._info.name)
        return EmbeddingModelRef(
            path, request.model_sha256, request.model_name or path.stem, check_sha256=True
        )

    def _embed(
        self,
        request: Any,
        model: EmbeddingModelRef,
        deadline: float | None,
        cancel: threading.Event,
    ) -> Any:
        texts = list(request.texts)
        try:
            result = self._engine.embed(model, texts, deadline=deadline, cancel=cancel)
        except BadRequestError as exc:
            self._log.event("bad_request", tag=request.tag, error=str(exc))
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
        except EmbedTimeoutError as exc:
            raise _Abort(grpc.StatusCode.DEADLINE_EXCEEDED, str(exc)) from None
        except (RuntimeError, ValueError) as exc:
            self._log.event("engine_error", tag=request.tag, error=repr(exc))
            raise _Abort(grpc.StatusCode.INTERNAL, f"embedding failed: {exc}") from None
        total_ms = result.queue_ms + result.run_ms
        self._log.event(
            "embed",
            tag=request.tag,
            model=model.name,
            texts=len(texts),
            tokens=sum(result.tokens),
            dimensions=result.dimensions,
            load_ms=round(result.load_ms, 1),
            queue_ms=round(result.queue_ms, 1),
            total_ms=round(total_ms, 1),
        )
        return pb.EmbedResponse(
            embeddings=[
                pb.Embedding(values=vector, tokens=tokens)
                for vector, tokens in zip(result.vectors, result.tokens, strict=True)
            ],
            model=model.name,
            model_sha256=model.sha256,
            dimensions=result.dimensions,
            pooling=POOLING,
            timings=pb.Timings(total_ms=total_ms, queue_ms=result.queue_ms),
            load_ms=result.load_ms,
        )

    def _run(
        self,
        chat: CompletionRequest,
        deadline: float | None,
        cancel: threading.Event,
    ) -> EngineResult:
        try:
            result = self._engine.complete(chat, deadline=deadline, cancel=cancel)
        except ContextOverflowError as exc:
            self._log.event(
                "context_overflow",
                tag=chat.tag,
                prompt_tokens=exc.prompt_tokens,
                n_ctx=exc.n_ctx,
                max_tokens=exc.max_tokens,
            )
            raise _Abort(grpc.StatusCode.OUT_OF_RANGE, str(exc)) from None
        except BadRequestError as exc:
            self._log.event("bad_request", tag=chat.tag, error=str(exc))
            raise _Abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc)) from None
        except (RuntimeError, ValueError) as exc:
            # llama.cpp reports a failed decode as RuntimeError: the request fails, the
            # daemon keeps serving.
            self._log.event("engine_error", tag=chat.tag, error=repr(exc))
            raise _Abort(grpc.StatusCode.INTERNAL, f"generation failed: {exc}") from None
        response = result.response
        self._log.event(
            "request",
            tag=chat.tag,
            stop_reason=response.stop_reason,
            input_tokens=response.usage.input_tokens,
            cached_input_tokens=response.usage.cached_input_tokens,
            output_tokens=response.usage.output_tokens,
            tool_calls=[c.name for c in response.tool_calls],
            queue_ms=round(result.queue_ms, 1),
            total_ms=round(response.timings.total_ms, 1),
            tokens_per_s=response.timings.tokens_per_s,
            # The rendered prompt, verbatim: what the model saw is the first question when
            # a case misbehaves (and how tests prove tool results reach the model).
            prompt=result.prompt,
        )
        return result
