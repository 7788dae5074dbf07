"""The error types library code raises, and the exit-code table the CLI maps them to.

Only `evalctl.cli` turns these into exit codes and output; everything else raises.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    GATE_FAILED = 1  # regression, orphaned case, leak, failed recovery, refused baseline
    BAD_INPUT = 2  # malformed file or usage; the message names the file and field
    INFRA = 3  # provider unreachable, daemon would not start, a case ended in `error`
    INTERNAL = 4  # a bug in evalctl: one line, the traceback saved to a file
    INTERRUPTED = 130  # Ctrl-C; partial results are kept


class EvalctlError(Exception):
    """An error with a user-facing message, an optional hint and the exit code it maps to."""

    code: ExitCode = ExitCode.INFRA

    def __init__(self, message: str, *, hint: str | None = None, code: ExitCode | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        return self.message


class BadInputError(EvalctlError):
    """A user file or argument is malformed; `location` says where (file, case id, field)."""

    code = ExitCode.BAD_INPUT

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        case_id: str | None = None,
        field: str | None = None,
        hint: str | None = None,
    ):
        self.file = file
        self.case_id = case_id
        self.field = field
        # The message without its location, for the --json `problems` list.
        self.detail = message
        parts = []
        if file:
            parts.append(file)
        if case_id:
            parts.append(f"case {case_id!r}")
        if field:
            parts.append(f"field {field!r}")
        located = f"{': '.join(parts)}: {message}" if parts else message
        super().__init__(located, hint=hint)


class GateFailedError(EvalctlError):
    code = ExitCode.GATE_FAILED


class InfraError(EvalctlError):
    code = ExitCode.INFRA


# The three failure classes every provider maps its failures onto (one retry policy reads them).
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
