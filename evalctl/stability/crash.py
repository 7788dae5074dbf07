"""`evalctl crash-test`: SIGKILL the daemon and prove the client notices and recovers.

Procedure, per kill:
1. The daemon serves (the first time, a probe request proves it works).
2. SIGKILL it:
   - between requests: while idle. The client must notice the daemon is gone the way the
     local provider does before each request (the lifecycle's liveness check), and
     `status` must report it not running although its socket file is still there;
   - mid-generation: while a long request is in flight. The client must see
     `ServerCrashedError`, the error the runner turns into a restarted case.
3. Check what the dead daemon left: its socket file (SIGKILL gives it no chance to remove
   it) and its flock, which the kernel must have released.
4. Send the next request with no manual help: the provider must respawn a daemon (new pid),
   remove the stale socket, take the lock, and answer.

Detection time runs from the SIGKILL to the client noticing; recovery time from detection
to the next request's successful reply (respawn, model load and generation included). A
kill whose failure went unseen or whose recovery failed fails the test (exit 1).
"""

from __future__ import annotations

import os
import secrets
import signal
import stat
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evalctl import __version__, flock
from evalctl.chat import CompletionRequest, Message
from evalctl.errors import BadInputError, EvalctlError, ServerCrashedError
from evalctl.providers.local import LocalProvider
from evalctl.results.io import write_json_atomic, write_toml_atomic
from evalctl.results.summary import latency_stats
from evalctl.stability.describe import make_out_dir
from evalctl.stability.models import (
    CRASH_JSON,
    CRASH_TOML,
    CrashResult,
    CrashSettings,
    CrashSummary,
    KillMode,
    KillRecord,
    Probe,
    capture_environment,
)

DEFAULT_KILLS = 3
DEFAULT_TIMEOUT_S = 120.0
# How long a SIGKILLed daemon may take to be gone (all threads exited, lock released).
GONE_TIMEOUT_S = 10.0
# After the daemon reports the request in flight: long enough to be past the short prompt's
# evaluation and into generation, far shorter than generating LONG_REQUEST's tokens.
MID_GENERATION_DELAY_S = 0.5
POLL_S = 0.02
STOP_GRACE_S = 5.0
REPORT_HTML = "crash-test.html"

PROBE_REQUEST = CompletionRequest(
    messages=[Message.system("Answer briefly."), Message.user("Name three colours.")],
    max_tokens=16,
    tag="crash-test/probe",
)
# A reply that cannot end before its token limit, however fast the machine: the grammar
# demands a 40,000-character string and no token of a llama.cpp vocabulary we ship is longer
# than 32 bytes, so 1,250 tokens cannot close it. A free-text "long story" can stop early
# (the embedded model ends some in under a second on an idle machine), and then there is
# nothing left to kill mid-generation.
UNENDING_MIN_CHARS = 40_000
UNENDING_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {"story": {"type": "string", "minLength": UNENDING_MIN_CHARS}},
    "required": ["story"],
}
LONG_REQUEST = CompletionRequest(
    messages=[
        Message.system("You are a storyteller who writes long, detailed stories."),
        Message.user("Write a very long story about a lighthouse keeper. Go on and on."),
    ],
    json_schema=UNENDING_SCHEMA,
    max_tokens=512,
    tag="crash-test/long",
    # A looping story must still be generating when the daemon is killed.
    allow_repetition=True,
)


@dataclass(frozen=True)
class CrashPlan:
    kills: int = DEFAULT_KILLS
    mid_generation: bool = False
    timeout_s: float = DEFAULT_TIMEOUT_S

    def modes(self) -> list[KillMode]:
        """Without --mid-generation every kill lands between requests. With it, kills
        alternate, mid-generation first, so both recovery paths run (2 kills: one each)."""
        if not self.mid_generation:
            return ["between-requests"] * self.kills
        return ["mid-generation" if i % 2 == 0 else "between-requests" for i in range(self.kills)]

    def check(self) -> None:
        if self.kills < 1:
            raise BadInputError("must be at least 1", field="--kills")
        if self.timeout_s <= 0:
            raise BadInputError("must be positive", field="--timeout")


ProgressSink = Callable[[KillRecord], None]


def new_crash_id() -> str:
    return f"{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-crash-{secrets.token_hex(2)}"


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def run_crash_test(
    provider: LocalProvider,
    plan: CrashPlan,
    *,
    progress: ProgressSink | None = None,
    crash_id: str | None = None,
) -> CrashResult:
    """Run the kills; the daemon left at the end is stopped (it was started for the test)."""
    plan.check()
    started_at = _now()
    try:
        status = provider.ensure_running()
        assert status.pid is not None
        result = CrashResult(
            crash_id=crash_id or new_crash_id(),
            started_at=started_at,
            evalctl_version=__version__,
            environment=capture_environment(status),
            settings=CrashSettings(
                kills=plan.kills, mid_generation=plan.mid_generation, timeout_s=plan.timeout_s
            ),
            probe=_probe(provider, status.pid, plan.timeout_s),
        )
        if not result.probe.ok:
            result.error = f"the daemon did not answer the probe request: {result.probe.error}"
        else:
            for n, mode in enumerate(plan.modes(), start=1):
                kill = _kill_between if mode == "between-requests" else _kill_mid_generation
                record = kill(provider, n, plan.timeout_s)
                result.kills.append(record)
                if progress is not None:
                    progress(record)
        result.finished_at = _now()
        result.summary = summarize_kills(result.kills)
        result.passed = (
            result.probe.ok
            and len(result.kills) == plan.kills
            and all(k.detected and k.recovered for k in result.kills)
        )
        return result
    finally:
        provider.stop_daemon(grace_s=STOP_GRACE_S)


def _probe(provider: LocalProvider, pid: int, timeout_s: float) -> Probe:
    started = time.monotonic()
    try:
        reply = provider.complete(PROBE_REQUEST, timeout=timeout_s)
    except EvalctlError as exc:
        return Probe(pid=pid, latency_ms=_ms(time.monotonic() - started), ok=False, error=str(exc))
    ok = reply.stop_reason != "timeout"
    return Probe(
        pid=pid,
        latency_ms=_ms(time.monotonic() - started),
        ok=ok,
        error=None if ok else "the probe request timed out",
    )


def _serving_pid(provider: LocalProvider) -> int:
    status = provider.ensure_running()
    assert status.pid is not None  # a ready daemon reports its pid
    return status.pid


def _kill_between(provider: LocalProvider, n: int, timeout_s: float) -> KillRecord:
    pid = _serving_pid(provider)
    record = KillRecord(n=n, mode="between-requests", killed_pid=pid)
    os.kill(pid, signal.SIGKILL)
    killed_at = time.monotonic()
    # The liveness check complete() runs before each request, then what `status` reports.
    if not provider.manager.wait_gone(pid, GONE_TIMEOUT_S):
        record.error = f"pid {pid} was still alive {GONE_TIMEOUT_S:g}s after SIGKILL"
        return record
    status = provider.status()
    detected_at = time.monotonic()
    record.detected = not status.running
    record.detection_ms = _ms(detected_at - killed_at)
    record.failure_seen = (
        "lifecycle: pid gone; status: not running"
        if record.detected
        else f"status still reports a running daemon (pid {status.pid})"
    )
    _inspect_leftovers(provider, record)
    _recover(provider, record, detected_at, timeout_s)
    return record


def _kill_mid_generation(provider: LocalProvider, n: int, timeout_s: float) -> KillRecord:
    pid = _serving_pid(provider)
    record = KillRecord(n=n, mode="mid-generation", killed_pid=pid)
    request_done = threading.Event()
    killed: list[float] = []  # the kill instant, set by the killer thread

    def killer() -> None:
        # Kill only once the daemon reports the request in flight, then a little later,
        # so the kill lands in generation rather than before the request arrived.
        while not request_done.is_set():
            if provider.status().in_flight >= 1:
                if not request_done.wait(MID_GENERATION_DELAY_S):
                    os.kill(pid, signal.SIGKILL)
                    killed.append(time.monotonic())
                return
            request_done.wait(POLL_S)

    thread = threading.Thread(target=killer, name="evalctl-crash-killer", daemon=True)
    thread.start()
    detected_at: float | None = None
    try:
        provider.complete(LONG_REQUEST, timeout=timeout_s)
        record.failure_seen = "nothing: the request completed"
    except ServerCrashedError as exc:
        detected_at = time.monotonic()
        record.failure_seen = f"ServerCrashedError: {exc}"
    except EvalctlError as exc:
        record.failure_seen = f"{type(exc).__name__}: {exc}"
    finally:
        request_done.set()
        thread.join()
    if not killed:
        record.error = "the request ended before the daemon could be killed mid-generation"
        return record
    if detected_at is None:
        record.error = f"expected ServerCrashedError, the client saw {record.failure_seen}"
        if not provider.manager.wait_gone(pid, GONE_TIMEOUT_S):
            return record
        detected_at = time.monotonic()
    else:
        record.detected = True
    record.detection_ms = _ms(detected_at - killed[0])
    _inspect_leftovers(provider, record)
    _recover(provider, record, detected_at, timeout_s)
    return record


def _inspect_leftovers(provider: LocalProvider, record: KillRecord) -> None:
    paths = provider.manager.paths
    record.stale_socket_left = paths.socket.exists()
    record.lock_released = not flock.is_locked(paths.lock)
    if not record.lock_released:
        record.error = "the dead daemon's lock is still held: no new daemon could start"


def _recover(
    provider: LocalProvider, record: KillRecord, detected_at: float, timeout_s: float
) -> None:
    """The next request, as any client would send it: the provider must respawn on its own."""
    try:
        reply = provider.complete(PROBE_REQUEST, timeout=timeout_s)
    except EvalctlError as exc:
        record.error = f"the request after the kill failed: {exc}"
        return
    answered_at = time.monotonic()
    if reply.stop_reason == "timeout":
        record.error = "the request after the kill timed out"
        return
    paths = provider.manager.paths
    new_pid = provider.daemon_pid
    record.new_pid = new_pid
    record.recovery_ms = _ms(answered_at - detected_at)
    owner = flock.read_pid(paths.lock)
    socket_ok = paths.socket.exists() and stat.S_ISSOCK(os.lstat(paths.socket).st_mode)
    record.lock_owner_ok = flock.is_locked(paths.lock) and owner == new_pid and socket_ok
    if new_pid is None or new_pid == record.killed_pid:
        record.error = f"no new daemon answered (pid {new_pid})"
    elif not record.lock_owner_ok:
        record.error = f"the lock names pid {owner}, not the new daemon {new_pid}"
    elif record.error is None:
        record.recovered = True


def summarize_kills(kills: list[KillRecord]) -> CrashSummary:
    detection = [k.detection_ms for k in kills if k.detection_ms is not None]
    recovery = [k.recovery_ms for k in kills if k.recovery_ms is not None]
    return CrashSummary(
        kills=len(kills),
        recovered=sum(k.recovered for k in kills),
        detection_ms=latency_stats(detection),
        recovery_ms=latency_stats(recovery),
        detection_max_ms=max(detection, default=0.0),
        recovery_max_ms=max(recovery, default=0.0),
    )


@dataclass(frozen=True)
class CrashFiles:
    json: Path
    toml: Path
    html: Path


def write_crash(result: CrashResult, out_dir: Path) -> CrashFiles:
    """The record: crash-test.toml, then crash-test.json (canonical, last). The command then
    renders the page to `html` (evalctl.reports.crash_page)."""
    make_out_dir(out_dir)
    files = CrashFiles(
        json=out_dir / CRASH_JSON, toml=out_dir / CRASH_TOML, html=out_dir / REPORT_HTML
    )
    write_toml_atomic(files.toml, result)
    write_json_atomic(files.json, result)
    return files
