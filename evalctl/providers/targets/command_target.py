"""The `command` target: your application as a program, run once per turn with the input
document as JSON on stdin; it writes its reply on stdout, JSON (a structured reply) or plain
text. A non-zero exit is a permanent error naming the status and the end of stderr.

It runs under the supervisor the command tools share (evalctl.supervise): in a session of its
own, with evalctl's environment; when the program exits, at the deadline, or when evalctl
dies, every process it started is killed, `setsid` children included. So a background child
that keeps stdout open ends with the program instead of holding the reply until the
deadline. Stdout is read up to the target's `max_reply_bytes` and no further.

The request's sampling (`temperature`, `top_p`, `seed`) is in the input document, and
`{{temperature}}`, `{{top_p}}` and `{{seed}}` in `argv` become their values, so a program that
takes them as flags gets them there.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from evalctl import supervise
from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.errors import ProviderError
from evalctl.providers.targets.config import CommandTarget
from evalctl.providers.targets.reply import (
    SAMPLING_KEYS,
    TargetTraits,
    read_json,
    refuse_side_request,
    render_template,
    target_input,
    to_response,
    too_large,
)

_STDERR_TAIL = 400


class CommandTargetProvider(TargetTraits):
    name = "command"
    summary = "your application as a program: input JSON on stdin (docs/targets.md)"
    concurrent = True

    def __init__(self, target: CommandTarget, suite_dir: Path):
        self._target = target
        # Relative programs and paths are the suite's, from any working directory.
        self._cwd = suite_dir.resolve()

    @property
    def model(self) -> str:
        return " ".join(self._target.argv)

    @property
    def sampling_params(self) -> frozenset[str]:
        """The program gets every sampling setting: in the input document on its stdin."""
        return frozenset(SAMPLING_KEYS)

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        refuse_side_request(request, f"command target {self.model}")
        limit = min(timeout, self._target.timeout_s or timeout)
        document = target_input(request)
        stdin = json.dumps(document).encode()
        argv = _argv(self._target.argv, {k: document[k] for k in SAMPLING_KEYS})
        what = f"command target {self.model}"
        started = time.monotonic()
        try:
            done = supervise.run(
                argv,
                cwd=self._cwd,
                env=os.environ,
                payload=stdin,
                timeout=limit,
                limit=self._target.max_reply_bytes,
            )
        except OSError as exc:
            raise ProviderError(f"{what} cannot start: {exc}") from None
        if done.cut == "timeout":
            return CompletionResponse(stop_reason="timeout", model=self.model)
        if done.cut == "too large":
            raise too_large(what, self._target.max_reply_bytes)
        if done.cannot_start is not None:
            raise ProviderError(f"{what} cannot start {done.cannot_start}")
        elapsed_ms = (time.monotonic() - started) * 1000
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip()[-_STDERR_TAIL:]
            raise ProviderError(f"{what} exited with status {done.returncode}: {tail}")
        text = done.stdout.decode(errors="replace")
        is_json, reply = read_json(text, what)
        if not is_json:
            reply = text.strip()
        return to_response(reply, what=what, model=self.model, elapsed_ms=elapsed_ms)

    def close(self) -> None:
        pass


def _argv(argv: list[str], sampling: dict[str, object]) -> list[str]:
    """`argv` with `{{temperature}}`, `{{top_p}}` and `{{seed}}` filled in as text (JSON's
    spelling: `0.3`, `7`, `null` for a seed not sent); any other `{{...}}` is left as is."""
    filled = (render_template(arg, sampling) for arg in argv)
    return [arg if isinstance(arg, str) else json.dumps(arg) for arg in filled]
