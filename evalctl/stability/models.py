"""Versioned result documents of the stability commands: `soak` and `crash-test`.

Like run results, each carries `schema_version` and a `kind`, so `evalctl report` picks its
renderer from the file, and readers refuse versions they do not know. Every document
records the machine and the exact model it measured (StabilityEnvironment): memory and
recovery figures mean nothing without them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from evalctl.lifecycle.manager import DaemonStatus
from evalctl.results.document import (
    Document,
    check_schema_version,
    validate_document,
)
from evalctl.results.models import SCHEMA_VERSION, Environment, LatencyStats
from evalctl.results.versions import supported
from evalctl.runner import environment
from evalctl.stability.verdict import Verdict

SOAK_JSON = "soak.json"
SOAK_TOML = "soak.toml"
CRASH_JSON = "crash-test.json"
CRASH_TOML = "crash-test.toml"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StabilityEnvironment(Environment):
    """The run environment plus the model and daemon settings that shape the numbers."""

    model_name: str
    model_sha256: str
    model_size_bytes: int = 0
    n_ctx: int = 0
    n_threads: int = 0


def capture_environment(status: DaemonStatus) -> StabilityEnvironment:
    """Host, CPU, RAM, versions (evalctl, llama-cpp-python) and the model the daemon serves."""
    return StabilityEnvironment(
        **environment.capture().model_dump(),
        model_name=status.model_name,
        model_sha256=status.model_sha256,
        model_size_bytes=status.model_size_bytes,
        n_ctx=status.n_ctx,
        n_threads=status.n_threads,
    )


# ---------------------------------------------------------------- soak


class MemorySample(_Strict):
    # Requests completed when the sample was taken: 0 is before the first request.
    request: int = Field(ge=0)
    elapsed_s: float
    rss_bytes: int
    uss_bytes: int
    anon_bytes: int


class SoakRequest(_Strict):
    index: int = Field(ge=1)
    case: str
    latency_ms: float
    stop_reason: str = ""
    output_tokens: int = 0
    # A request that failed without taking the daemon down (a rejected request, a timeout).
    error: str | None = None


class SoakSettings(_Strict):
    requests: int
    warmup: int
    sample_every: int
    threshold_pct: float
    timeout_s: float
    suites: list[str] = Field(default_factory=list)
    case_glob: str | None = None
    # The case keys cycled through, in order.
    cases: list[str] = Field(default_factory=list)


class SoakDaemon(_Strict):
    pid: int
    # Requests the daemon had served before the soak (non-zero when it was already up).
    requests_served_before: int = 0
    requests_served_after: int | None = None
    # Whether the soak started this daemon (and so stopped it at the end).
    started_by_soak: bool = True
    anon_source: str = "RssAnon"


class SoakResult(_Strict):
    schema_version: Literal[1] = SCHEMA_VERSION
    kind: Literal["soak"] = "soak"
    soak_id: str
    started_at: str
    finished_at: str | None = None
    interrupted: bool = False
    # Why the soak stopped early (the daemon died, a sample failed); None when it ran out.
    error: str | None = None
    evalctl_version: str
    environment: StabilityEnvironment
    daemon: SoakDaemon
    settings: SoakSettings
    samples: list[MemorySample] = Field(default_factory=list)
    requests: list[SoakRequest] = Field(default_factory=list)
    verdict: Verdict


# ---------------------------------------------------------------- crash-test

KillMode = Literal["between-requests", "mid-generation"]


class Probe(_Strict):
    """The request that proved the daemon worked before the first kill."""

    pid: int
    latency_ms: float
    ok: bool
    error: str | None = None


class KillRecord(_Strict):
    n: int = Field(ge=1)
    mode: KillMode
    killed_pid: int
    # What the client saw: the error class and message, or how the lifecycle noticed.
    failure_seen: str = ""
    detected: bool = False
    # From the SIGKILL to the client noticing (ms).
    detection_ms: float | None = None
    # Left by the killed daemon: the socket file (SIGKILL leaves it behind) and whether the
    # kernel released its flock (it must, or nobody could start a new daemon).
    stale_socket_left: bool = False
    lock_released: bool = False
    recovered: bool = False
    new_pid: int | None = None
    # From detection to the next request's successful reply, respawn and model load
    # included (ms).
    recovery_ms: float | None = None
    # After recovery the lock file names the new daemon and its socket answers.
    lock_owner_ok: bool = False
    error: str | None = None


class CrashSettings(_Strict):
    kills: int
    mid_generation: bool
    timeout_s: float


class CrashSummary(_Strict):
    kills: int = 0
    recovered: int = 0
    detection_ms: LatencyStats = Field(default_factory=LatencyStats)
    recovery_ms: LatencyStats = Field(default_factory=LatencyStats)
    detection_max_ms: float = 0.0
    recovery_max_ms: float = 0.0


class CrashResult(_Strict):
    schema_version: Literal[1] = SCHEMA_VERSION
    kind: Literal["crash-test"] = "crash-test"
    crash_id: str
    started_at: str
    finished_at: str | None = None
    evalctl_version: str
    environment: StabilityEnvironment
    settings: CrashSettings
    probe: Probe
    kills: list[KillRecord] = Field(default_factory=list)
    summary: CrashSummary = Field(default_factory=CrashSummary)
    passed: bool = False
    error: str | None = None


# ---------------------------------------------------------------- reading

# The versions each reads: the table of evalctl.results.versions (none older yet).
SUPPORTED_VERSIONS: tuple[int, ...] = supported("soak")
SUPPORTED_CRASH_VERSIONS: tuple[int, ...] = supported("crash-test")


def soak_from_document(doc: Document) -> SoakResult:
    check_schema_version(doc, SUPPORTED_VERSIONS)
    return validate_document(doc, SoakResult)


def crash_from_document(doc: Document) -> CrashResult:
    check_schema_version(doc, SUPPORTED_CRASH_VERSIONS)
    return validate_document(doc, CrashResult)
