"""`evalctl run --restart-per-case`: a fresh daemon for every case (the full benchmark).

A long-lived daemon carries state from one case to the next: KV cache, allocator arenas,
page cache of the model file, a slow leak. The full-benchmark procedure removes all of it:
before each case the previous daemon is stopped, an optional cooldown lets the machine
settle, and a new one is started and waited for. Each case then records, in
`CaseResult.daemon`, the pid that served it, how long that daemon took to start, how long
the case took, and every transport error it met (including those the retry policy hid by
succeeding on a later try).

The wrapper is a Provider, so the runner sends requests through it unchanged; the runner
calls `around_case` for each case it runs (evalctl.runner.execute).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, cast

from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.errors import BadInputError, ServerCrashedError, TransientProviderError
from evalctl.lifecycle.manager import DaemonStatus, StopResult
from evalctl.providers.base import Provider
from evalctl.providers.wrapper import ProviderWrapper
from evalctl.results.models import CaseDaemon, CaseResult

STOP_GRACE_S = 10.0


class RestartableProvider(Protocol):
    """What a provider with a daemon of its own to start and stop offers beside the
    `Provider` base (the local provider, whose class says `has_daemon = True`)."""

    @property
    def daemon_pid(self) -> int | None: ...

    def ensure_running(self) -> DaemonStatus: ...

    def stop_daemon(self, *, grace_s: float | None = None) -> StopResult: ...


class RestartPerCase(ProviderWrapper[Provider]):
    def __init__(self, inner: Provider, *, cooldown_s: float = 0.0):
        super().__init__(inner)
        # Its daemon's controls: only a provider whose class has a daemon is wrapped.
        self.daemon = cast(RestartableProvider, inner)
        self.cooldown_s = cooldown_s
        self._cases_started = 0
        self._transport_errors: list[str] = []

    @classmethod
    def around(cls, provider: Provider, *, cooldown_s: float) -> RestartPerCase:
        """Wrap `provider`, refusing one that has no daemon to restart."""
        # The provider's class says so (`Provider.has_daemon`): a runtime Protocol check
        # would call the properties, and `daemon_pid` asks the daemon over RPC.
        if not provider.has_daemon:
            raise BadInputError(
                f"applies to the local provider only; {provider.name!r} has no daemon to restart",
                field="--restart-per-case",
            )
        if cooldown_s < 0:
            raise BadInputError("must not be negative", field="--cooldown")
        return cls(provider, cooldown_s=cooldown_s)

    # -- Provider protocol (the rest is forwarded by ProviderWrapper) -------------------

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        try:
            return self.inner.complete(request, timeout=timeout)
        except (TransientProviderError, ServerCrashedError) as exc:
            # Recorded even when a retry then succeeds: a benchmark wants to know.
            self._transport_errors.append(f"{type(exc).__name__}: {exc}")
            raise

    def close(self) -> None:
        # The last case's daemon was started for the benchmark: do not leave it behind.
        try:
            self.daemon.stop_daemon(grace_s=STOP_GRACE_S)
        finally:
            self.inner.close()

    # -- per case ---------------------------------------------------------------------

    def around_case(self, run: Callable[[], CaseResult]) -> CaseResult:
        """Stop the previous daemon, cool down, start a fresh one, run the case, annotate."""
        self.daemon.stop_daemon(grace_s=STOP_GRACE_S)
        if self._cases_started and self.cooldown_s > 0:
            time.sleep(self.cooldown_s)
        self._cases_started += 1
        self._transport_errors = []
        started = time.monotonic()
        status = self.daemon.ensure_running()
        ready = time.monotonic()
        result = run()
        finished = time.monotonic()
        daemon = CaseDaemon(
            pid=status.pid,
            start_ms=round((ready - started) * 1000, 1),
            duration_ms=round((finished - ready) * 1000, 1),
            transport_errors=list(self._transport_errors),
        )
        # The daemon that answered last, when a crash made the provider respawn mid-case.
        last_pid = self.daemon.daemon_pid
        if last_pid is not None and last_pid != status.pid:
            daemon.final_pid = last_pid
        return result.model_copy(update={"daemon": daemon})
