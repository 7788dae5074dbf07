"""The Provider protocol and the error classes every provider maps its failures onto."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.errors import EvalctlError, ExitCode

# Capabilities a suite may require; a provider lacking one gets that suite's cases skipped.
CAP_TOOLS = "tools"
CAP_JSON_SCHEMA = "json_schema"


class ProviderError(EvalctlError):
    """A permanent failure (bad request, auth): retrying would not help."""

    code = ExitCode.INFRA


class TransientProviderError(ProviderError):
    """Rate limit, overload, lost connection: the shared retry policy retries these."""

    def __init__(self, message: str, *, retry_after: float | None = None, hint: str | None = None):
        super().__init__(message, hint=hint)
        self.retry_after = retry_after


class ServerCrashedError(ProviderError):
    """The local inference daemon died while serving the request.

    Not a TransientProviderError on purpose: retrying the one request would resume a
    conversation whose state died with the server, so the runner restarts the whole case
    instead (and records the attempt as `error` with `server_crashed`).
    """


class ProviderUnavailableError(EvalctlError):
    """A provider's prerequisite (API key, model file, SDK) is missing."""

    code = ExitCode.INFRA


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
