"""`evalctl server serve|start|stop|status`: the local inference daemon by hand.

`serve` runs the daemon in the foreground (what `start` spawns in the background);
`start`, `stop` and `status` act on the daemon of one model, found by the model's hash.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import BaseModel
from rich.table import Table

from evalctl.cli import options
from evalctl.cli.output import emit, stdout
from evalctl.errors import BadInputError

if TYPE_CHECKING:
    from evalctl.providers.local import LocalProvider

server_app = typer.Typer(help="Run and manage the local inference daemon.", no_args_is_help=True)

IDLE = typer.Option("--idle-timeout", help="Exit after this long without requests (0: never).")
THREADS = typer.Option(
    "--threads",
    help="llama.cpp threads for generation (default: the physical cores this process may "
    "use, less busy ones).",
)
THREADS_BATCH = typer.Option(
    "--threads-batch",
    min=1,
    help="llama.cpp threads for prompt evaluation (default: as many as --threads; "
    "EVALCTL_LOCAL_THREADS_BATCH, local_threads_batch in evalctl.toml).",
)
N_CTX = typer.Option("--n-ctx", help="Context window in tokens.")
PARALLEL = typer.Option(
    "--parallel",
    min=1,
    help="Requests served at once, each on a context of its own with its share of the "
    "threads (default 1; EVALCTL_LOCAL_PARALLEL, local_parallel in evalctl.toml; a run "
    "with -j N restarts an idle daemon with N).",
)
GPU_LAYERS = typer.Option(
    "--gpu-layers",
    min=-1,
    help="Layers to offload to a GPU, -1 for all (default: all when this llama.cpp build "
    "can offload, else 0; EVALCTL_LOCAL_GPU_LAYERS, local_gpu_layers in evalctl.toml).",
)


def _duration(text: str, flag: str) -> float:
    from evalctl.server.options import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise BadInputError(str(exc), field=flag) from None


def _env_int(name: str, what: str, fallback: int | None) -> int | None:
    """An integer from the environment variable `name`, else `fallback` (evalctl.toml's)."""
    env = options.environ().get(name)
    if not env:
        return fallback
    try:
        return int(env)
    except ValueError:
        raise BadInputError(f"{name} must be {what}, not {env!r}", field=name) from None


def _provider(
    model: str | None,
    *,
    idle: str = "5m",
    threads: int | None = None,
    threads_batch: int | None = None,
    n_ctx: int = 4096,
    gpu_layers: int | None = None,
    parallel: int | None = None,
    verify_file: bool = True,
) -> LocalProvider:
    from evalctl.modelfiles.manifest import resolve, sha256_file, verify
    from evalctl.providers.local import LocalProvider

    settings = options.settings_from_env()
    if gpu_layers is None:
        gpu_layers = _env_int(
            "EVALCTL_LOCAL_GPU_LAYERS", "an integer (-1: all layers)", settings.local_gpu_layers
        )
    if threads_batch is None:
        threads_batch = _env_int(
            "EVALCTL_LOCAL_THREADS_BATCH", "an integer", settings.local_threads_batch
        )
    if parallel is None:
        parallel = _env_int("EVALCTL_LOCAL_PARALLEL", "an integer", settings.local_parallel)
    resolved = resolve(model or settings.local_model)
    if verify_file:
        sha = verify(resolved)
    else:
        # stop/status only need the hash that keys the daemon, not a verified file.
        sha = resolved.expected_sha256 or sha256_file(resolved.path)
    return LocalProvider(
        settings,
        resolved,
        sha,
        n_ctx=n_ctx,
        n_threads=threads,
        n_threads_batch=threads_batch,
        n_gpu_layers=gpu_layers,
        parallel=parallel or 1,
        idle_timeout_s=_duration(idle, "--idle-timeout"),
    )


def _render_status(status: BaseModel) -> None:
    data = status.model_dump()
    if not data["running"]:
        stdout.print(f"not running (socket {data['socket']})")
        return
    table = Table(show_header=False)
    table.add_column("field", style="dim")
    table.add_column("value", overflow="fold")
    for key, value in data.items():
        table.add_row(key, str(value))
    stdout.print(table)


@server_app.command("serve")
def serve(
    model: Annotated[Path, typer.Option("--model", help="Path to the .gguf file.")],
    socket: Annotated[Path, typer.Option("--socket", help="Unix socket to listen on.")],
    idle_timeout: Annotated[str, IDLE] = "5m",
    threads: Annotated[int | None, THREADS] = None,
    threads_batch: Annotated[int | None, THREADS_BATCH] = None,
    n_ctx: Annotated[int, N_CTX] = 4096,
    gpu_layers: Annotated[int | None, GPU_LAYERS] = None,
    parallel: Annotated[
        int, typer.Option("--parallel", min=1, help="Requests served at once.")
    ] = 1,
    log: Annotated[
        Path | None, typer.Option("--log", help="JSON-lines log file (default: stderr).")
    ] = None,
    model_name: Annotated[str, typer.Option("--model-name", help="Name shown in status.")] = "",
    grace: Annotated[
        str, typer.Option("--grace", help="How long in-flight work may finish.")
    ] = "10s",
) -> None:
    """Serve one model over gRPC in the foreground until SIGTERM, Shutdown or idle."""
    from evalctl.server.__main__ import run
    from evalctl.server.options import DaemonOptions

    run(
        DaemonOptions(
            model_path=model,
            socket_path=socket,
            model_name=model_name,
            idle_timeout_s=_duration(idle_timeout, "--idle-timeout"),
            grace_s=_duration(grace, "--grace"),
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads_batch,
            n_gpu_layers=gpu_layers,
            parallel=parallel,
            log_path=log,
        )
    )


@server_app.command("start")
def start(
    model: Annotated[str | None, options.MODEL] = None,
    idle_timeout: Annotated[str, IDLE] = "5m",
    threads: Annotated[int | None, THREADS] = None,
    threads_batch: Annotated[int | None, THREADS_BATCH] = None,
    n_ctx: Annotated[int, N_CTX] = 4096,
    gpu_layers: Annotated[int | None, GPU_LAYERS] = None,
    parallel: Annotated[int | None, PARALLEL] = None,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Start the daemon for a model (if not running) and wait until it is ready."""
    provider = _provider(
        model,
        idle=idle_timeout,
        threads=threads,
        threads_batch=threads_batch,
        n_ctx=n_ctx,
        gpu_layers=gpu_layers,
        parallel=parallel,
    )
    try:
        emit(provider.ensure_running(), as_json, _render_status)
    finally:
        provider.close()


@server_app.command("stop")
def stop(
    model: Annotated[str | None, options.MODEL] = None,
    grace: Annotated[
        str, typer.Option("--grace", help="How long in-flight work may finish.")
    ] = "10s",
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Stop the daemon: Shutdown RPC, then SIGTERM, then SIGKILL, each bounded."""
    from evalctl.errors import InfraError

    provider = _provider(model, verify_file=False)
    result = provider.stop_daemon(grace_s=_duration(grace, "--grace"))

    def render(r: BaseModel) -> None:
        data = r.model_dump()
        if data["how"] == "not_running":
            stdout.print("not running")
        else:
            stdout.print(f"stopped pid {data['pid']} ({data['how']}, {data['seconds']:.2f}s)")

    emit(result, as_json, render)
    if not result.stopped:
        raise InfraError(f"could not stop the daemon (pid {result.pid})")


@server_app.command("status")
def status(
    model: Annotated[str | None, options.MODEL] = None,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Show whether the model's daemon runs, and its pid, uptime and requests served."""
    provider = _provider(model, verify_file=False)
    try:
        emit(provider.status(), as_json, _render_status)
    finally:
        provider.close()


def register(app: typer.Typer) -> None:
    app.add_typer(server_app, name="server")
