"""What the cloud providers (anthropic, gemini, openai) share: error classification, timings,
and sending texts to an embeddings endpoint in batches within one time budget.

Classification (one table for every API, so the shared RetryPolicy sees the same thing):

* transient (retried): HTTP 408, 409, 429, any 5xx (500, 502, 503, 504, Anthropic's 529
  overloaded), connection refused/reset/dropped, timeouts, and a malformed response body;
* permanent (not retried): every other 4xx: 400 bad request, 401/403 auth, 404 unknown model,
  413 too large, 422.

A malformed body counts as transient because it is a transport/gateway fault (a truncated or
mangled reply), not something wrong with our request; the retry bound caps the cost if it
keeps happening, and the case then ends as `error`, never as `fail`.

Every message is passed through `evalctl.secrets.redact`: SDK errors quote response bodies,
and a gateway may echo the credential it was sent.
"""

from __future__ import annotations

import email.utils
import importlib
import time
from collections.abc import Iterator, Mapping, Sequence

from evalctl.chat import Timings
from evalctl.errors import ProviderError, TransientProviderError
from evalctl.secrets import SECRET_ENV_VARS, redact

TRANSIENT_STATUS = frozenset({408, 409, 429})


def redaction_env(env: Mapping[str, str]) -> dict[str, str]:
    """The keys in `env` that redaction needs: a provider never keeps the whole environment."""
    return {k: env[k] for k in SECRET_ENV_VARS if env.get(k)}


def is_transient_status(status: int) -> bool:
    return status in TRANSIENT_STATUS or status >= 500


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from `retry-after-ms`, `retry-after` (seconds or an HTTP date); None if absent."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = lowered.get(name)
        if value is None:
            continue
        try:
            return max(0.0, float(value) * scale)
        except ValueError:
            pass
        if name == "retry-after":
            parsed = email.utils.parsedate_tz(value)
            if parsed is not None:
                return max(0.0, email.utils.mktime_tz(parsed) - time.time())
    return None


def status_error(
    provider: str,
    status: int,
    detail: str,
    *,
    env: Mapping[str, str],
    retry_after: float | None = None,
    key_vars: str,
    model_hint: str,
) -> ProviderError:
    """The evalctl error for an HTTP error status, classified and redacted."""
    message = redact(f"{provider}: HTTP {status}: {detail}", env)
    if is_transient_status(status):
        hint = "rate limited: lower -j/--concurrency" if status == 429 else None
        return TransientProviderError(message, retry_after=retry_after, hint=hint)
    if status in (401, 403):
        hint = f"check {key_vars} (and the base URL, if you go through a gateway)"
    elif status == 404:
        hint = f"check the model name ({model_hint})"
    else:
        hint = None
    return ProviderError(message, hint=hint)


def transport_error(
    provider: str, exc: BaseException, *, env: Mapping[str, str], timeout: float
) -> TransientProviderError:
    """Timeouts and refused/reset/dropped connections: transient."""
    if is_timeout(exc):
        return TransientProviderError(
            f"{provider}: no reply within {timeout:g}s", hint="raise the case timeout"
        )
    detail = f"connection failed ({type(exc).__name__})"
    return TransientProviderError(redact(f"{provider}: {detail}: {exc}", env))


def malformed_body(provider: str, exc: BaseException, *, env: Mapping[str, str]) -> ProviderError:
    """A reply that is not the JSON document the API promises: transient (see above)."""
    return TransientProviderError(redact(f"{provider}: malformed response body: {exc}", env))


def _httpx_classes(name: str) -> tuple[type[BaseException], ...]:
    # The SDKs run on httpx2 (or httpx): accept either without importing one that is absent.
    found: list[type[BaseException]] = []
    for module_name in ("httpx2", "httpx"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        cls = getattr(module, name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


def transport_exceptions() -> tuple[type[BaseException], ...]:
    return _httpx_classes("TransportError")


def is_timeout(exc: BaseException) -> bool:
    current: BaseException | None = exc
    timeouts = _httpx_classes("TimeoutException")
    while current is not None:
        if isinstance(current, (*timeouts, TimeoutError)) or "Timeout" in type(current).__name__:
            return True
        current = current.__cause__
    return False


def timings(started: float, output_tokens: int, ttft_ms: float | None = None) -> Timings:
    total_s = time.monotonic() - started
    rate = output_tokens / total_s if total_s > 0 and output_tokens else None
    return Timings(ttft_ms=ttft_ms, total_ms=round(total_s * 1000, 3), tokens_per_s=rate)


def embedding_batches(
    provider: str, texts: Sequence[str], size: int, timeout: float
) -> Iterator[tuple[list[str], float]]:
    """`texts` in batches of at most `size` (an API's limit per request), each with the
    seconds left of `timeout` for it; raises a transient error once none is left, naming
    the texts not embedded."""
    started = time.monotonic()
    for start in range(0, len(texts), size):
        remaining = timeout - (time.monotonic() - started)
        if remaining <= 0:
            raise TransientProviderError(
                f"{provider}: no time left to embed texts {start} and on",
                hint="embed fewer texts per call, or allow more time",
            )
        yield list(texts[start : start + size]), remaining


def check_vector_count(provider: str, sent: int, got: int) -> None:
    """A reply with a vector missing is a malformed one (transient, as every malformed body)."""
    if got != sent:
        raise TransientProviderError(
            f"{provider}: {sent} texts sent for embedding, {got} vectors back"
        )
