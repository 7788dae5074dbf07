"""The Provider protocol and the capability names; its error classes live in `evalctl.errors`."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from evalctl.chat import CompletionRequest, CompletionResponse

# Capabilities a suite may require; a provider lacking one gets that suite's cases skipped.
CAP_TOOLS = "tools"
CAP_JSON_SCHEMA = "json_schema"
# Every capability there is: what a suite may `require` of a provider, and what a provider
# that supports everything offers.
CAPABILITIES = frozenset({CAP_TOOLS, CAP_JSON_SCHEMA})


@runtime_checkable
class Provider(Protocol):
    """Stateless single-turn completion; the runner owns the conversation."""

    name: str

    @property
    def model(self) -> str: ...

    @property
    def model_sha256(self) -> str | None: ...

    @property
    def capabilities(self) -> frozenset[str]: ...

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse: ...

    def close(self) -> None: ...


def provider_run_settings(provider: Provider) -> dict[str, Any]:
    """What a provider reports about how it ran (e.g. the local daemon's threads), for the
    results' `provider.settings`; providers without a `run_settings()` report nothing."""
    report = getattr(provider, "run_settings", None)
    return dict(report()) if callable(report) else {}
