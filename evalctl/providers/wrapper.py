"""A provider that forwards to another: the base for wrappers that add behaviour around
requests (restart-per-case, fault injection in tests) without repeating the protocol."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.providers.base import (
    Provider,
    Speed,
    measured_speed,
    provider_platform,
    provider_run_settings,
)

P = TypeVar("P", bound=Provider)


class ProviderWrapper(Provider, Generic[P]):
    def __init__(self, inner: P):
        self.inner = inner
        self.name = inner.name
        # The wrapped provider's, on this instance (a class attribute of the providers).
        self.capabilities = inner.capabilities

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def model_sha256(self) -> str | None:
        return self.inner.model_sha256

    @property
    def sampling_params(self) -> frozenset[str]:
        return self.inner.sampling_params

    def run_settings(self) -> dict[str, Any]:
        return provider_run_settings(self.inner)

    def platform_info(self) -> dict[str, Any]:
        return provider_platform(self.inner)

    def measured_speed(self) -> Speed | None:
        return measured_speed(self.inner)

    def default_concurrency(self) -> int:
        return self.inner.default_concurrency()

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        return self.inner.complete(request, timeout=timeout)

    def close(self) -> None:
        self.inner.close()
