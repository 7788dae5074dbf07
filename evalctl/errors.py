"""The error types library code raises, the exit-code table (each code's meaning, verdict
word, tone and icon), and the `Outcome` a command that ran to its end returns.

Only `evalctl.cli.app` turns an error or an outcome into the process exit; library code
raises, commands return.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Literal, Protocol, runtime_checkable

# The case-status colour an exit code is drawn in: every renderer already has a palette for
# these (Rich names in the terminal, the HTML kit's badges), so a code names its tone, not a
# colour of its own.
Tone = Literal["pass", "fail", "error", "flaky", "skipped"]


class ExitCode(IntEnum):
    """The process exit codes: the one table of what each means, how a verdict names it and
    how renderers draw it (`meaning`, `verdict`, `tone`, `icon`)."""

    OK = 0
    GATE_FAILED = 1
    BAD_INPUT = 2
    INFRA = 3
    INTERNAL = 4
    INTERRUPTED = 130

    @property
    def meaning(self) -> str:
        return _TABLE[self].meaning

    @property
    def verdict(self) -> str:
        """The word a verdict line starts with: `OK`, `FAILED`, `UNSCORED`, ..."""
        return _TABLE[self].verdict

    @property
    def tone(self) -> Tone:
        return _TABLE[self].tone

    @property
    def icon(self) -> str:
        """For Markdown headings (the CI job page)."""
        return _TABLE[self].icon


@dataclass(frozen=True)
class _Row:
    meaning: str
    verdict: str
    tone: Tone
    icon: str


_TABLE: dict[ExitCode, _Row] = {
    ExitCode.OK: _Row("ok", "OK", "pass", "✅"),
    # A regression, an orphaned case, a leak, a failed recovery, a refused baseline.
    ExitCode.GATE_FAILED: _Row("quality gate failed", "FAILED", "fail", "❌"),
    # A malformed file or usage; the message names the file and field.
    ExitCode.BAD_INPUT: _Row("bad input", "BAD INPUT", "flaky", "⚠️"),
    # Provider unreachable, daemon would not start, a case ended in `error` (so unscored).
    ExitCode.INFRA: _Row("infrastructure", "UNSCORED", "error", "💥"),
    # A bug in evalctl: one line, the traceback saved to a file.
    ExitCode.INTERNAL: _Row("internal error", "INTERNAL ERROR", "error", "🐛"),
    # Ctrl-C or SIGTERM; partial results are kept.
    ExitCode.INTERRUPTED: _Row("interrupted", "INTERRUPTED", "skipped", "⏹️"),
}


@runtime_checkable
class Outcome(Protocol):
    """How a command that ran to its end came out, when that is not plain success: a command
    returns one, and only `evalctl.cli.app` turns it into the process exit (the `summary` on
    stderr, then the code). A gate's verdict is one (`baselines.comparison.GateVerdict`)."""

    @property
    def exit_code(self) -> ExitCode: ...

    @property
    def summary(self) -> str: ...

    @property
    def hint(self) -> str | None: ...


@dataclass(frozen=True)
class Ended:
    """A plain `Outcome`: the code, and the line that says why (empty: the command's own
    output already said it)."""

    exit_code: ExitCode
    summary: str = ""
    hint: str | None = None


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


class ContextOverflowError(ProviderError):
    """The conversation no longer fits the model's context window.

    Permanent for this conversation, so not retried. On a case's first request it is the
    suite's problem (its prompt does not fit) and the case is `error`; later, the model's own
    turns (tool calls and their results) outgrew the window, and the runner ends the
    conversation there and scores what it has, as it does when `max_turns` runs out.
    """


class ProviderUnavailableError(EvalctlError):
    """A provider's prerequisite (API key, model file, SDK) is missing."""

    code = ExitCode.INFRA
