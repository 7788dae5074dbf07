"""The `command` target: your application as a program, run once per turn with the input
document as JSON on stdin; it writes its reply on stdout, JSON (a structured reply) or plain
text. A non-zero exit is a permanent error naming the status and the end of stderr.

Its process handling is its own rather than `[[suite.tool]]`'s (evalctl.tools.command): the
tools sit above the providers and a provider may not reach up to them. It starts the program
in a session of its own and, on timeout, kills that whole process group.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.errors import ProviderError
from evalctl.providers.targets.config import CommandTarget
from evalctl.providers.targets.reply import (
    TargetTraits,
    refuse_side_request,
    target_input,
    to_response,
)

_STDERR_TAIL = 400


class CommandTargetProvider(TargetTraits):
    name = "command"

    def __init__(self, target: CommandTarget, suite_dir: Path):
        self._target = target
        # Relative programs and paths are the suite's, from any working directory.
        self._cwd = suite_dir.resolve()

    @property
    def model(self) -> str:
        return " ".join(self._target.argv)

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        refuse_side_request(request, f"command target {self.model}")
        limit = min(timeout, self._target.timeout_s or timeout)
        stdin = json.dumps(target_input(request)).encode()
        what = f"command target {self.model}"
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                self._target.argv,
                cwd=self._cwd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise ProviderError(f"{what} cannot start: {exc}") from None
        try:
            out, err = proc.communicate(stdin, timeout=limit)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return CompletionResponse(stop_reason="timeout", model=self.model)
        finally:
            _kill_group(proc)  # whatever it started in its session goes with it
        elapsed_ms = (time.monotonic() - started) * 1000
        if proc.returncode != 0:
            tail = err.decode(errors="replace").strip()[-_STDERR_TAIL:]
            raise ProviderError(f"{what} exited with status {proc.returncode}: {tail}")
        text = out.decode(errors="replace")
        reply: Any
        try:
            reply = json.loads(text)
        except json.JSONDecodeError:
            reply = text.strip()
        return to_response(reply, what=what, model=self.model, elapsed_ms=elapsed_ms)

    def close(self) -> None:
        pass


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.returncode is None:
        proc.communicate()
