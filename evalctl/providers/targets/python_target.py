"""The `python` target: your application's entry point, `module:function`, called in this
process with the input document (evalctl.providers.targets.reply), sync or async.

It runs in this process, not a worker, on purpose: the function spy (`[[suite.spy]]`) wraps
functions in this interpreter and sees no call made in another process. It runs on a thread of
its own so that the case's time limit can stop waiting for it: a function past its limit is
abandoned (Python cannot kill a thread; it keeps running to its end in the background) and
the case ends in `error` as timed out.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.errors import BadInputError, ProviderError
from evalctl.providers.targets.config import PythonTarget
from evalctl.providers.targets.importing import ImportProblem, load_object
from evalctl.providers.targets.reply import (
    TargetTraits,
    refuse_side_request,
    target_input,
    to_response,
)


def _call(function: Callable[..., Any], document: dict[str, Any]) -> Any:
    result = function(document)
    if inspect.isawaitable(result):

        async def wait() -> Any:
            return await result

        return asyncio.run(wait())
    return result


class PythonTargetProvider(TargetTraits):
    name = "python"

    def __init__(
        self,
        target: PythonTarget,
        suite_dir: Path,
        *,
        source: str = "",
        field: str = "suite.target",
    ):
        self._target = target
        try:
            function = load_object(target.function, suite_dir)
        except ImportProblem as exc:
            raise BadInputError(str(exc), file=source or None, field=f"{field}.function") from None
        if not callable(function):
            raise BadInputError(
                f"{target.function} is not callable",
                file=source or None,
                field=f"{field}.function",
            )
        self._function: Callable[..., Any] = function

    @property
    def model(self) -> str:
        return self._target.function

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        refuse_side_request(request, f"python target {self._target.function}")
        limit = min(timeout, self._target.timeout_s or timeout)
        document = target_input(request)
        outcome: dict[str, Any] = {}
        # The case's context goes with the call, so spied functions record into its log.
        context = contextvars.copy_context()

        def run() -> None:
            try:
                outcome["reply"] = context.run(_call, self._function, document)
            except BaseException as exc:  # reported to the waiting thread, not lost
                outcome["error"] = exc

        started = time.monotonic()
        worker = threading.Thread(target=run, name="evalctl-python-target", daemon=True)
        worker.start()
        worker.join(limit)
        elapsed_ms = (time.monotonic() - started) * 1000
        if worker.is_alive():
            return CompletionResponse(stop_reason="timeout", model=self.model)
        error = outcome.get("error")
        if error is not None:
            raise ProviderError(
                f"python target {self._target.function} raised {type(error).__name__}: {error}"
            )
        return to_response(
            outcome.get("reply"),
            what=f"python target {self._target.function}",
            model=self.model,
            elapsed_ms=elapsed_ms,
        )

    def close(self) -> None:
        pass
