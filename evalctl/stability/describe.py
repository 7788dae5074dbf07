"""Shared wording of stability numbers, so the terminal, HTML and Markdown say the same thing."""

from __future__ import annotations

from pathlib import Path

from evalctl.errors import BadInputError
from evalctl.results.models import Environment
from evalctl.stability.models import StabilityEnvironment

MIB = 1024 * 1024


def mib(value: float) -> str:
    return f"{value / MIB:.1f} MiB"


def signed_mib(value: float) -> str:
    return f"{value / MIB:+.2f} MiB"


def pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2f}%"


def per_request(value: float | None) -> str:
    """A slope in bytes/request, in the unit that keeps it readable."""
    if value is None:
        return "-"
    if abs(value) >= MIB:
        return f"{value / MIB:+.2f} MiB/request"
    return f"{value / 1024:+.1f} KiB/request"


def ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def environment_rows(
    env: Environment, *, model: str | None = None, sha256: str | None = None
) -> list[tuple[str, str]]:
    """(label, value) rows: host, CPU, RAM, model and SHA256, evalctl and llama-cpp-python."""
    if isinstance(env, StabilityEnvironment):
        model, sha256 = env.model_name, env.model_sha256
    rows = [
        ("host", env.host),
        ("CPU", f"{env.cpu} ({env.cpu_count} CPUs)"),
        ("RAM", f"{env.ram_bytes / (1024**3):.1f} GiB"),
        ("platform", env.platform),
        ("model", model or "-"),
        ("model SHA256", sha256 or "-"),
        ("evalctl", env.evalctl),
        ("llama-cpp-python", env.llama_cpp or "not installed"),
        ("python", env.python),
    ]
    if isinstance(env, StabilityEnvironment):
        rows.append(("llama threads / n_ctx", f"{env.n_threads} / {env.n_ctx}"))
    return rows


def make_out_dir(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInputError(f"cannot create directory: {exc.strerror}", file=str(path)) from None
    return path
