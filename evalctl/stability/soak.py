"""`evalctl soak`: N requests on one warm daemon, its memory sampled throughout, a verdict.

Procedure: start the daemon (or use the one already serving the model), sample its memory
before the first request, send N requests cycling through the chosen cases, sampling after
every `sample_every`-th request, at the end of the warm-up and after the last one; then
judge the anonymous-memory series (evalctl.stability.verdict). The soak stops early, and
says why, if the daemon dies: samples from a respawned process would not be comparable.

Every sample and request is kept in the result, written as JSON (canonical) and TOML, with
an SVG chart and an HTML page of memory over requests beside them.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evalctl import __version__
from evalctl.errors import BadInputError, InfraError, ProviderError, ServerCrashedError
from evalctl.lifecycle.manager import DaemonStatus
from evalctl.providers.local import LocalProvider
from evalctl.results.io import write_json_atomic, write_toml_atomic
from evalctl.stability.describe import make_out_dir
from evalctl.stability.memory import read_memory
from evalctl.stability.models import (
    SOAK_JSON,
    SOAK_TOML,
    MemorySample,
    SoakDaemon,
    SoakRequest,
    SoakResult,
    SoakSettings,
    capture_environment,
)
from evalctl.stability.requests import CaseCall
from evalctl.stability.verdict import DEFAULT_THRESHOLD_PCT, MIN_WINDOW_SAMPLES, judge

DEFAULT_REQUESTS = 25
# Cases cycled through by default, and so the default warm-up (one pass over them). The
# allocator keeps the high-water mark of the largest request it has served: the first time
# each distinct request is seen can still raise anonymous memory (measured on asset-triage:
# steps of 1.5 to 11 MiB at first sight, none on repeats), so a leak is only judged on
# requests that have all been seen once. 25 requests over 5 cases leave 4 passes to judge.
DEFAULT_CYCLE = 5
CHART_SVG = "memory.svg"
REPORT_HTML = "soak.html"
STOP_GRACE_S = 5.0


@dataclass(frozen=True)
class SoakPlan:
    requests: int = DEFAULT_REQUESTS
    warmup: int = DEFAULT_CYCLE
    sample_every: int = 1
    threshold_pct: float = DEFAULT_THRESHOLD_PCT

    def sample_points(self) -> list[int]:
        """Request counts after which memory is sampled: 0 (before the first request), the
        end of the warm-up (the verdict's baseline), every `sample_every`-th, the last."""
        points = {0, self.warmup, self.requests}
        points.update(range(self.sample_every, self.requests + 1, self.sample_every))
        return sorted(p for p in points if p <= self.requests)

    def check(self) -> None:
        """Refuse plans that could not produce a verdict, naming the flag to change."""
        if self.requests < 1:
            raise BadInputError("must be at least 1", field="--requests")
        if self.warmup < 0:
            raise BadInputError("must not be negative", field="--warmup")
        if self.sample_every < 1:
            raise BadInputError("must be at least 1", field="--sample-every")
        if self.threshold_pct <= 0:
            raise BadInputError("must be a positive percentage", field="--threshold")
        window = [p for p in self.sample_points() if p >= self.warmup]
        if len(window) < MIN_WINDOW_SAMPLES:
            raise BadInputError(
                f"{self.requests} requests with a {self.warmup}-request warm-up, sampled "
                f"every {self.sample_every}, leave {len(window)} samples to judge; the "
                f"verdict needs {MIN_WINDOW_SAMPLES}",
                field="--requests",
                hint="raise --requests, or lower --warmup or --sample-every",
            )


def cycle_of(calls: list[CaseCall], cycle: int) -> list[CaseCall]:
    """The cases a soak cycles through: the first `cycle` of the selection (0: all)."""
    if cycle < 0:
        raise BadInputError("must not be negative", field="--cycle")
    return calls[:cycle] if cycle else list(calls)


@dataclass(frozen=True)
class SoakProgress:
    """Reported after each request (and with the sample taken then, if any)."""

    request: int
    total: int
    case: str
    latency_ms: float
    sample: MemorySample | None
    error: str | None = None


ProgressSink = Callable[[SoakProgress], None]


def new_soak_id() -> str:
    return f"{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-soak-{secrets.token_hex(2)}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def run_soak(
    provider: LocalProvider,
    plan: SoakPlan,
    calls: list[CaseCall],
    *,
    suites: list[str],
    case_glob: str | None = None,
    timeout_s: float | None = None,
    progress: ProgressSink | None = None,
    soak_id: str | None = None,
) -> SoakResult:
    """Run the soak; the result holds a verdict even when it stopped early (then usually
    `inconclusive`, with `error` or `interrupted` saying why).

    A daemon the soak started is stopped at the end; one that was already serving the model
    is left running, as it was found.
    """
    plan.check()
    if not calls:
        raise BadInputError("no cases to send", hint="check --suite/--case")
    started_at = _now()
    already_running = provider.status().running
    status = provider.ensure_running()
    assert status.pid is not None  # a ready daemon reports its pid
    pid = status.pid
    try:
        result = _start(plan, calls, status, already_running)
        result.soak_id = soak_id or result.soak_id
        result.started_at = started_at
        result.settings.suites = suites
        result.settings.case_glob = case_glob
        result.settings.timeout_s = timeout_s or result.settings.timeout_s
        try:
            points = set(plan.sample_points())
            _send_all(provider, plan, calls, pid, points, time.monotonic(), result, progress)
        except KeyboardInterrupt:
            result.interrupted = True
        result.finished_at = _now()
        result.verdict = judge(
            [(s.request, s.anon_bytes) for s in result.samples],
            warmup=plan.warmup,
            threshold_pct=plan.threshold_pct,
        )
        if provider.manager.owner_alive(pid):
            after = provider.status()
            if after.pid == pid:
                result.daemon.requests_served_after = after.requests_served
        return result
    finally:
        # Leave the machine as found: stop a daemon the soak started, even on an error.
        if not already_running:
            provider.stop_daemon(grace_s=STOP_GRACE_S)


def _start(
    plan: SoakPlan, calls: list[CaseCall], status: DaemonStatus, already_running: bool
) -> SoakResult:
    """The result's header and the sample before the first request."""
    assert status.pid is not None
    first = read_memory(status.pid)
    return SoakResult(
        soak_id=new_soak_id(),
        started_at=_now(),
        evalctl_version=__version__,
        environment=capture_environment(status),
        daemon=SoakDaemon(
            pid=status.pid,
            requests_served_before=status.requests_served,
            started_by_soak=not already_running,
            anon_source=first.anon_source,
        ),
        settings=SoakSettings(
            requests=plan.requests,
            warmup=plan.warmup,
            sample_every=plan.sample_every,
            threshold_pct=plan.threshold_pct,
            timeout_s=max(c.timeout_s for c in calls),
            cases=[c.key for c in calls],
        ),
        samples=[
            MemorySample(
                request=0,
                elapsed_s=0.0,
                rss_bytes=first.rss_bytes,
                uss_bytes=first.uss_bytes,
                anon_bytes=first.anon_bytes,
            )
        ],
        verdict=judge([], warmup=plan.warmup, threshold_pct=plan.threshold_pct),
    )


def _send_all(
    provider: LocalProvider,
    plan: SoakPlan,
    calls: list[CaseCall],
    pid: int,
    points: set[int],
    clock: float,
    result: SoakResult,
    progress: ProgressSink | None,
) -> None:
    for index in range(1, plan.requests + 1):
        call = calls[(index - 1) % len(calls)]
        # complete() would silently respawn a dead daemon; a soak must notice instead.
        if not provider.manager.owner_alive(pid):
            result.error = f"the daemon (pid {pid}) died before request {index}"
            return
        started = time.monotonic()
        record = SoakRequest(index=index, case=call.key, latency_ms=0.0)
        try:
            reply = provider.complete(call.request, timeout=call.timeout_s)
            record.stop_reason = reply.stop_reason
            record.output_tokens = reply.usage.output_tokens
        except ServerCrashedError as exc:
            record.error = str(exc)
            result.error = f"the daemon crashed during request {index}: {exc}"
        except ProviderError as exc:
            # The daemon rejected this one request and kept serving: memory is still
            # comparable, so the soak goes on and the error is kept with the request.
            record.error = str(exc)
        record.latency_ms = round((time.monotonic() - started) * 1000, 1)
        result.requests.append(record)
        if result.error is not None:
            return
        sample = None
        if index in points:
            try:
                reading = read_memory(pid)
            except InfraError as exc:
                result.error = f"cannot sample after request {index}: {exc}"
                return
            sample = MemorySample(
                request=index,
                elapsed_s=round(time.monotonic() - clock, 3),
                rss_bytes=reading.rss_bytes,
                uss_bytes=reading.uss_bytes,
                anon_bytes=reading.anon_bytes,
            )
            result.samples.append(sample)
        if progress is not None:
            progress(
                SoakProgress(
                    index, plan.requests, call.key, record.latency_ms, sample, record.error
                )
            )


@dataclass(frozen=True)
class SoakFiles:
    json: Path
    toml: Path
    chart: Path
    html: Path


def write_soak(result: SoakResult, out_dir: Path) -> SoakFiles:
    """The record: soak.toml, then soak.json (its appearance means the write completed), both
    atomically. The command then renders the chart and the page to the other two paths
    (evalctl.reports.soak_page)."""
    make_out_dir(out_dir)
    files = SoakFiles(
        json=out_dir / SOAK_JSON,
        toml=out_dir / SOAK_TOML,
        chart=out_dir / CHART_SVG,
        html=out_dir / REPORT_HTML,
    )
    write_toml_atomic(files.toml, result)
    write_json_atomic(files.json, result)
    return files
