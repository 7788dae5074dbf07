"""The local provider: a gRPC client of the llama.cpp daemon, which it starts on demand.

Failure semantics (what the runner sees):
- the daemon died *between* requests: the next `complete()` notices (its pid is gone),
  respawns it through `ensure_running()` and succeeds; nothing is raised;
- the daemon died *during* a request (UNAVAILABLE / broken connection, and its pid is
  gone): the channel is dropped and `ServerCrashedError` is raised; the next `complete()`
  respawns;
- the daemon is alive but unreachable or stopping: `TransientProviderError` (retried by
  the shared policy, which ends up in the respawn path above);
- gRPC DEADLINE_EXCEEDED: a response with stop_reason "timeout" and no content. The
  daemon normally answers with stop_reason "timeout" itself before the deadline; when the
  deadline still wins (a long prompt evaluation, a queue behind other requests), the case
  ran out of time either way, and retrying would only spend the same budget again;
- OUT_OF_RANGE (the conversation outgrew the context window): `ContextOverflowError`, which
  the runner scores as the end of the conversation after the first reply (else `error`).
- INVALID_ARGUMENT (bad schema, unknown tool): `ProviderError` with the daemon's message;
  the daemon keeps serving.

`embed()` goes to the daemon's Embed RPC: the same start and crash handling; a text the
daemon refuses (empty, longer than the embedding context) is `BadInputError`, and a deadline
that passes is a `ProviderError` (an embedding cut short has no partial answer to score).
The embedding model is the served one unless `local_embedding_model` /
EVALCTL_LOCAL_EMBEDDING_MODEL names another GGUF, verified here like the served model and
hashed again by the daemon before it loads it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.config import Settings
from evalctl.embeddings import Embeddings
from evalctl.errors import (
    BadInputError,
    ContextOverflowError,
    EvalctlError,
    ProviderError,
    ServerCrashedError,
    TransientProviderError,
)
from evalctl.lifecycle.manager import DaemonManager, DaemonSpec, DaemonStatus, StopResult
from evalctl.modelfiles.manifest import ResolvedModel, resolve, sha256_file, verify
from evalctl.providers import local_engine
from evalctl.providers.base import CHAT_AND_EMBEDDINGS, Provider, Speed
from evalctl.providers.options import ProviderOptions
from evalctl.server.options import DEFAULT_IDLE_TIMEOUT_S, DEFAULT_N_CTX, parse_duration
from evalctl.server.threads import default_threads

# The RPC deadline exceeds the generation timeout the daemon enforces, so that the daemon's
# own "timeout" reply (with the partial output) normally arrives first.
RPC_SLACK_S = 2.0
# How long a daemon that dropped our connection may take to finish dying.
DEATH_WAIT_S = 2.0


class LocalProvider(Provider):
    name = "local"
    summary = "llama.cpp daemon over gRPC (embedded SmolLM2-135M by default)"
    capabilities = CHAT_AND_EMBEDDINGS
    # Its daemon serves as many cases at once as it has slots (`local_parallel`, else -j).
    concurrent = True
    detect_env = ("EVALCTL_LOCAL_MODEL",)
    # Its daemon may be stopped and started per case (`--restart-per-case`).
    has_daemon = True

    def __init__(
        self,
        settings: Settings,
        model: ResolvedModel,
        sha256: str,
        *,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        n_threads_batch: int | None = None,
        n_gpu_layers: int | None = None,
        parallel: int = 1,
        idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S,
        start_timeout_s: float | None = None,
        embedding_model: tuple[ResolvedModel, str] | None = None,
    ):
        self._model = model
        self._sha256 = sha256
        # Another GGUF to embed with and its verified SHA256; None: the served model.
        self._embedding_model = embedding_model
        spec = DaemonSpec(
            model_path=model.path,
            model_name=model.name,
            model_sha256=sha256,
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads_batch,
            n_gpu_layers=n_gpu_layers,
            parallel=parallel,
            idle_timeout_s=idle_timeout_s,
        )
        extra = {} if start_timeout_s is None else {"start_timeout_s": start_timeout_s}
        self.manager = DaemonManager(settings, spec, before_spawn=self._reverify, **extra)
        self._pid: int | None = None
        # Cases sent at once (-j) may all find the daemon gone: one of them (re)starts it.
        self._start_lock = threading.Lock()
        self._spec = spec
        self._threads: int | None = None
        self._status: DaemonStatus | None = None
        # Why the daemon failed to start when `measured_speed` tried: the next request
        # reports it instead of spending another start timeout on the same failure.
        self._start_failure: EvalctlError | None = None

    # -- Provider protocol ------------------------------------------------------------

    @property
    def model(self) -> str:
        return self._model.name

    @property
    def model_sha256(self) -> str | None:
        return self._sha256

    # What `evalctl providers` and `--provider local` know before starting anything.
    @classmethod
    def unavailable_reason(cls, options: ProviderOptions) -> str | None:
        return local_engine.unavailable_reason(options)

    @classmethod
    def check_given(cls, options: ProviderOptions) -> None:
        local_engine.check_given(options)

    @classmethod
    def describe(cls, options: ProviderOptions) -> str:
        return local_engine.describe(options.settings, options.env, options.model, options.extra)

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        import grpc

        from evalctl.server import convert

        self._ensure_daemon()
        timeout = max(timeout, 0.1)
        message = convert.request_to_pb(request, timeout_s=timeout)
        try:
            reply = self.manager.client().complete(message, timeout=timeout + RPC_SLACK_S)
        except grpc.RpcError as exc:
            return self._on_rpc_error(exc)
        except ValueError as exc:
            # An RPC on a closed channel raises ValueError, not RpcError.
            self._forget_daemon()
            raise TransientProviderError(f"the daemon connection was closed: {exc}") from None
        return convert.response_from_pb(reply)

    @property
    def embedding_model(self) -> str:
        """The name of the model `embed()` uses."""
        return self._embedding_model[0].name if self._embedding_model else self._model.name

    def embed(self, texts: Sequence[str], *, timeout: float) -> Embeddings:
        """One L2-normalised vector per text (mean pooling), in order, from the daemon."""
        import grpc

        from evalctl.server.gen import inference_pb2 as pb

        if not texts:
            sha = self._embedding_model[1] if self._embedding_model else self._sha256
            return Embeddings([], self.embedding_model, sha, 0)
        self._ensure_daemon()
        timeout = max(timeout, 0.1)
        message = pb.EmbedRequest(texts=list(texts), timeout_s=timeout)
        if self._embedding_model is not None:
            resolved, sha = self._embedding_model
            message.model_path = str(resolved.path)
            message.model_sha256 = sha
            message.model_name = resolved.name
        try:
            reply = self.manager.client().embed(message, timeout=timeout + RPC_SLACK_S)
        except grpc.RpcError as exc:
            self._on_embed_error(exc, timeout)
        except ValueError as exc:
            self._forget_daemon()
            raise TransientProviderError(f"the daemon connection was closed: {exc}") from None
        return Embeddings(
            vectors=[list(e.values) for e in reply.embeddings],
            model=reply.model,
            model_sha256=reply.model_sha256 or None,
            input_tokens=sum(e.tokens for e in reply.embeddings),
        )

    def close(self) -> None:
        # The daemon stays up for other requests and processes; its idle timeout ends it.
        self.manager.close()

    # -- daemon access (runner, stability commands, tests) ----------------------------

    def ensure_running(self) -> DaemonStatus:
        """Start the daemon if needed and wait until it serves; returns its status.

        A daemon left running with another number of slots than this provider asks for (an
        earlier run at another -j) is stopped and started again when it serves no request:
        with fewer, cases sent beyond its slots would only queue, and their time limits with
        them; with more, each case would decode on its slot's share of the threads."""
        with self._start_lock:
            return self._ensure_running()

    def _ensure_running(self) -> DaemonStatus:
        status = self.manager.ensure_running()
        if status.n_parallel != self._spec.parallel and status.in_flight == 0:
            self.manager.drop_client()
            self.manager.stop()
            status = self.manager.ensure_running()
        self._pid = status.pid
        self._threads = status.n_threads or None
        self._status = status
        return status

    def measured_speed(self) -> Speed | None:
        """The daemon's measured speeds (its warm-up at load, then recent requests), for the
        cases' time limits; starts the daemon if needed, so a case's clock does not pay for
        the model load. None when the daemon cannot start or measured nothing yet: the
        request that follows reports why it cannot start."""
        try:
            if self._pid is None or not self.manager.owner_alive(self._pid):
                self.manager.drop_client()
                status = self.ensure_running()
            else:
                status = self.manager.status()
        except EvalctlError as exc:
            self._start_failure = exc
            return None
        if status.gen_tokens_per_s <= 0:
            return None
        self._status = status
        return Speed(
            gen_tokens_per_s=status.gen_tokens_per_s,
            prompt_tokens_per_s=status.prompt_tokens_per_s or None,
            source="measured by the daemon",
        )

    def platform_info(self) -> dict[str, Any]:
        """llama.cpp's build, the CPU and how the model ran, from the daemon that served the
        run (or the last status seen of it), for the results' platform record."""
        status = self._status
        if status is None or not status.running:
            current = self.manager.status()
            status = current if current.running else status
        threads = self._threads or self._spec.n_threads or self._default_threads()
        info: dict[str, Any] = {
            "threads": threads,
            "threads_batch": self._spec.n_threads_batch or threads,
            "parallel": self._spec.parallel,
        }
        if status is not None and status.running:
            info.update(
                llama_cpp=status.backend_version or None,
                system_info=status.system_info or None,
                cpu=status.cpu_model or None,
                threads=status.n_threads or info["threads"],
                threads_batch=status.n_threads_batch or info["threads_batch"],
                parallel=status.n_parallel or info["parallel"],
                batch_size=status.n_batch or None,
                gpu_layers=status.n_gpu_layers,
            )
        return info

    def run_settings(self) -> dict[str, Any]:
        """How the model ran, for the results: threads (and who chose them), context size,
        KV-cache prefix reuse, GPU layers, measured speeds."""
        chosen = self._spec.n_threads
        threads = self._threads or chosen or self._default_threads()
        status = self._status
        batch = (status.n_threads_batch if status is not None else 0) or (
            self._spec.n_threads_batch or threads
        )
        return {
            "threads": threads,
            "threads_from": "setting"
            if chosen
            else "default: physical cores in affinity, less busy ones, shared among the "
            "parallel requests",
            # Prompt evaluation's threads; unset, generation's count.
            "threads_batch": batch,
            "threads_batch_from": "setting" if self._spec.n_threads_batch else "default: threads",
            # Requests served at once, each on its own context: threads count per request.
            "parallel": (status.n_parallel if status is not None else 0) or self._spec.parallel,
            "n_ctx": self._spec.n_ctx,
            "prefix_cache": True,
            # Layers really offloaded, as the daemon reports them (None: not started).
            "gpu_layers": self._status.n_gpu_layers if self._status is not None else None,
            # The speeds the cases' time limits were sized from, as last reported.
            "gen_tokens_per_s": round(self._status.gen_tokens_per_s, 1) if self._status else None,
            "prompt_tokens_per_s": (
                round(self._status.prompt_tokens_per_s, 1) if self._status else None
            ),
        }

    @property
    def daemon_pid(self) -> int | None:
        """The pid of the daemon serving this model, or None if none is running."""
        if self._pid is not None and self.manager.owner_alive(self._pid):
            return self._pid
        return self.manager.pid

    def status(self) -> DaemonStatus:
        return self.manager.status()

    def stop_daemon(self, *, grace_s: float | None = None) -> StopResult:
        result = self.manager.stop(grace_s=grace_s)
        self._pid = None
        return result

    def default_concurrency(self) -> int:
        """A run without -j sends as many cases at once as the daemon has slots."""
        return self._spec.parallel

    # -- internals --------------------------------------------------------------------

    def _default_threads(self) -> int:
        # The daemon's own default (evalctl.server.engine): the cores shared out among slots.
        return max(1, default_threads() // self._spec.parallel)

    def _reverify(self) -> None:
        # The file was hashed when the provider was created; hash again before any daemon
        # loads it, so a file swapped in the meantime is refused too.
        if self._model.expected_sha256 is not None:
            verify(self._model)
            return
        actual = sha256_file(self._model.path)
        if actual != self._sha256:
            raise BadInputError(
                f"model file changed since it was verified: expected {self._sha256}, got {actual}",
                file=str(self._model.path),
            )

    def _ensure_daemon(self) -> None:
        if self._pid is None or not self.manager.owner_alive(self._pid):
            failure, self._start_failure = self._start_failure, None
            if failure is not None:
                raise failure
            # First request, or the daemon went away since the last one: (re)start it.
            self.manager.drop_client()
            self.ensure_running()

    def _forget_daemon(self) -> None:
        self.manager.drop_client()

    def _on_embed_error(self, exc: object, timeout: float) -> NoReturn:
        import grpc

        assert isinstance(exc, grpc.RpcError)
        code = exc.code()
        details = exc.details() or str(code)
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            raise ProviderError(
                f"embedding did not finish within {timeout:g}s: {details}",
                hint="embed fewer or shorter texts per call, or allow more time",
            ) from None
        if code == grpc.StatusCode.INVALID_ARGUMENT:
            raise BadInputError(f"the local daemon cannot embed this: {details}") from None
        self._raise_for(code, details)

    def _on_rpc_error(self, exc: object) -> CompletionResponse:
        import grpc

        assert isinstance(exc, grpc.RpcError)
        code = exc.code()
        details = exc.details() or str(code)
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return CompletionResponse(stop_reason="timeout", model=self.model)
        if code == grpc.StatusCode.OUT_OF_RANGE:
            raise ContextOverflowError(
                f"the local daemon rejected the request: {details}"
            ) from None
        if code == grpc.StatusCode.INVALID_ARGUMENT:
            raise ProviderError(f"the local daemon rejected the request: {details}") from None
        self._raise_for(code, details)

    def _raise_for(self, code: Any, details: str) -> NoReturn:
        """A failure common to every RPC: a crash, an unavailable or failing daemon."""
        import grpc

        pid = self._pid
        if pid is not None and self.manager.wait_gone(pid, DEATH_WAIT_S):
            self._forget_daemon()
            raise ServerCrashedError(
                f"the inference daemon (pid {pid}) died during the request ({code.name}: "
                f"{details})",
                hint=f"its logs: {self.manager.paths.log} and {self.manager.paths.stderr}",
            ) from None
        if code == grpc.StatusCode.UNAVAILABLE:
            self._forget_daemon()
            raise TransientProviderError(
                f"the inference daemon is unavailable: {details}"
            ) from None
        if code == grpc.StatusCode.INTERNAL:
            raise TransientProviderError(f"the inference daemon failed: {details}") from None
        raise ProviderError(f"the inference daemon failed ({code.name}): {details}") from None


def _setting(extra: Mapping[str, str], env: Mapping[str, str], key: str, var: str) -> str | None:
    return extra.get(key) or env.get(var) or None


def _gpu_layers(text: str | None) -> int | None:
    if text is None:
        return None
    layers = int(text)
    if layers < -1:
        raise ValueError(f"gpu layers must be -1 (all), 0 (none) or a count, not {layers}")
    return layers


def _parallel(text: str) -> int:
    count = int(text)
    if count < 1:
        raise ValueError(f"parallel requests must be 1 or more, not {count}")
    return count


def _threads_batch(text: str | None) -> int | None:
    if text is None:
        return None
    count = int(text)
    if count < 1:
        raise ValueError(f"prompt threads must be 1 or more, not {count}")
    return count


def _embedding_model(options: ProviderOptions) -> tuple[ResolvedModel, str] | None:
    """The GGUF named by EVALCTL_LOCAL_EMBEDDING_MODEL or `local_embedding_model`, verified;
    None when neither is set (the served model embeds)."""
    name = _setting(
        options.extra, options.env, "embedding_model", "EVALCTL_LOCAL_EMBEDDING_MODEL"
    ) or (options.settings.local_embedding_model or None)
    if name is None:
        return None
    try:
        resolved = resolve(name)
        return resolved, verify(resolved)
    except BadInputError as exc:
        raise BadInputError(
            exc.detail,
            file=exc.file,
            field="local_embedding_model (EVALCTL_LOCAL_EMBEDDING_MODEL)",
            hint=exc.hint,
        ) from None


def create(options: ProviderOptions) -> LocalProvider:
    """Resolve and verify the model (SHA256) first: nothing loads an unverified file."""
    resolved = resolve(options.model or options.settings.local_model)
    sha256 = verify(resolved)
    embedding_model = _embedding_model(options)
    threads = _setting(options.extra, options.env, "threads", "EVALCTL_LOCAL_THREADS")
    if threads is None and options.settings.local_threads is not None:
        threads = str(options.settings.local_threads)
    batch = _setting(options.extra, options.env, "threads_batch", "EVALCTL_LOCAL_THREADS_BATCH")
    if batch is None and options.settings.local_threads_batch is not None:
        batch = str(options.settings.local_threads_batch)
    n_ctx = _setting(options.extra, options.env, "n_ctx", "EVALCTL_LOCAL_N_CTX")
    parallel = _setting(options.extra, options.env, "parallel", "EVALCTL_LOCAL_PARALLEL")
    if parallel is None:
        given = options.settings.local_parallel or options.concurrency
        # One slot unless asked: measured on 2 cores, two slots of one thread served the
        # demo no faster (docs/hardware.md, "Cases decoded together").
        parallel = str(given or 1)
    gpu_layers = _setting(options.extra, options.env, "gpu_layers", "EVALCTL_LOCAL_GPU_LAYERS")
    if gpu_layers is None and options.settings.local_gpu_layers is not None:
        gpu_layers = str(options.settings.local_gpu_layers)
    idle = _setting(options.extra, options.env, "idle_timeout", "EVALCTL_IDLE_TIMEOUT")
    try:
        return LocalProvider(
            options.settings,
            resolved,
            sha256,
            n_ctx=int(n_ctx) if n_ctx else DEFAULT_N_CTX,
            n_threads=int(threads) if threads else None,
            n_threads_batch=_threads_batch(batch),
            n_gpu_layers=_gpu_layers(gpu_layers),
            parallel=_parallel(parallel),
            idle_timeout_s=parse_duration(idle) if idle else DEFAULT_IDLE_TIMEOUT_S,
            embedding_model=embedding_model,
        )
    except ValueError as exc:
        raise BadInputError(
            f"invalid local provider setting: {exc}",
            hint="EVALCTL_LOCAL_THREADS and EVALCTL_LOCAL_THREADS_BATCH (or local_threads and "
            "local_threads_batch in evalctl.toml), EVALCTL_LOCAL_N_CTX and "
            "EVALCTL_LOCAL_GPU_LAYERS (-1: all) and EVALCTL_LOCAL_PARALLEL (1 or more) take "
            "integers; "
            "EVALCTL_IDLE_TIMEOUT a duration such as 5m",
        ) from None
