"""The `python` target: your application's entry point, `module:function`, called in this
process with the input document (evalctl.providers.targets.reply), or, with `call =
"keywords"`, with the case's input fields as keyword arguments; sync or async.

It runs in this process, not a worker, on purpose: the function spy (`[[suite.spy]]`) wraps
functions in this interpreter and sees no call made in another process. It runs on a thread of
its own so that the case's time limit can stop waiting for it: a function past its limit is
abandoned (Python cannot kill a thread; it keeps running to its end in the background, where
it may no longer change the working directory nor print: evalctl.providers.targets.inprocess)
and the case ends in `error` as timed out.
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

from evalctl.calllog import current, safe_text
from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.errors import BadInputError, ProviderError
from evalctl.providers.targets import inprocess
from evalctl.providers.targets.config import SAMPLING_KEYWORDS, PythonTarget
from evalctl.providers.targets.importing import ImportProblem, load_object
from evalctl.providers.targets.inprocess import TargetExit
from evalctl.providers.targets.reply import (
    TargetTraits,
    refuse_side_request,
    target_input,
    to_response,
)

_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def declared_sampling(function: Callable[..., Any]) -> frozenset[str]:
    """The sampling settings `function` declares by name (a `**kwargs` declares none), so a
    keyword call passes it those and no others; none when it has no signature to read."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return frozenset()
    return frozenset(
        name
        for name in SAMPLING_KEYWORDS
        if (declared := parameters.get(name)) is not None and declared.kind in _NAMED
    )


def keyword_arguments(
    function: Callable[..., Any], fields: dict[str, Any], sampling: dict[str, Any]
) -> dict[str, Any]:
    """What `call = "keywords"` calls `function` with: the case's input fields (a `prompt`
    or `messages` the case does not use left out), plus each sampling setting the function
    declares by name (a `**kwargs` declares none of them). ProviderError when the fields do
    not fit its signature, or when a field is named like a sampling setting (the loader
    refuses such a case; this holds for a caller that skipped it)."""
    clash = [name for name in SAMPLING_KEYWORDS if fields.get(name) is not None]
    if clash:
        raise ProviderError(
            f"the case's input field {clash[0]!r} is named like a sampling setting evalctl "
            'passes to a python target with call = "keywords"; rename it'
        )
    # A field left None by the kind's input model is not the case's: the sampling fills it.
    left_out = ("prompt", "messages", *SAMPLING_KEYWORDS)
    kwargs = {k: v for k, v in fields.items() if v is not None or k not in left_out}
    try:
        signature: inspect.Signature | None = inspect.signature(function)
    except (TypeError, ValueError):  # no signature to read (some builtins): the fields alone
        signature = None
    if signature is None:
        return kwargs
    for name in declared_sampling(function):
        kwargs[name] = sampling[name]
    try:
        signature.bind(**kwargs)
    except TypeError as exc:
        what = getattr(function, "__qualname__", repr(function))
        raise ProviderError(
            f"the case's input fields ({', '.join(kwargs) or 'none'}) do not fit "
            f'{what}{signature} as keywords (call = "keywords"): {exc}'
        ) from None
    return kwargs


def _call(function: Callable[..., Any], document: dict[str, Any] | None, **kwargs: Any) -> Any:
    result = function(document) if document is not None else function(**kwargs)
    if inspect.isawaitable(result):

        async def wait() -> Any:
            return await result

        return asyncio.run(wait())
    return result


class PythonTargetProvider(TargetTraits):
    name = "python"
    summary = "your application's module:function, called in this process (docs/targets.md)"
    # The application may not be thread-safe: one case at a time (not `concurrent`).

    def __init__(
        self,
        target: PythonTarget,
        suite_dir: Path,
        *,
        source: str = "",
        field: str = "suite.target",
    ):
        self._target = target
        self._open = False
        # evalctl's stdout, os._exit and the application's threads are kept (evalctl.providers.
        # targets.inprocess) while its module is imported, and from its first call to close().
        inprocess.install()
        try:
            with inprocess.application_code():
                function = load_object(target.function, suite_dir)
        except (ImportProblem, TargetExit, SystemExit) as exc:
            why = str(exc) if isinstance(exc, ImportProblem) else f"importing it {_exited(exc)}"
            raise BadInputError(why, file=source or None, field=f"{field}.function") from None
        finally:
            inprocess.uninstall()
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

    @property
    def sampling_params(self) -> frozenset[str]:
        """The sampling settings the function receives: all of them in the input document,
        or, called with keywords, those it declares (results record no more)."""
        if self._target.call == "keywords":
            return declared_sampling(self._function)
        return frozenset(SAMPLING_KEYWORDS)

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        refuse_side_request(request, f"python target {self._target.function}")
        if not self._open:
            inprocess.install()
            self._open = True
        limit = min(timeout, self._target.timeout_s or timeout)
        keywords: dict[str, Any] = {}
        document: dict[str, Any] | None = None
        if self._target.call == "keywords":
            log = current()
            keywords = keyword_arguments(
                self._function,
                log.input if log is not None else {},
                request.sampling.model_dump(),
            )
        else:
            document = target_input(request)
        outcome: dict[str, Any] = {}
        # The case's context goes with the call, so spied functions record into its log.
        context = contextvars.copy_context()
        call = inprocess.Call()

        def run() -> None:
            # The threads it starts do not hold evalctl's exit; once the case is over, none of
            # them changes the working directory or writes to evalctl's streams.
            inprocess.mark_current_thread(call)
            try:
                outcome["reply"] = context.run(_call, self._function, document, **keywords)
            except BaseException as exc:  # reported to the waiting thread, not lost
                outcome["error"] = exc

        started = time.monotonic()
        worker = threading.Thread(target=run, name="evalctl-python-target", daemon=True)
        # Its cwd and environment changes are undone once it returns (or is given up on),
        # after which it may change them no more.
        with inprocess.call_guard():
            worker.start()
            worker.join(limit)
            call.end()
        elapsed_ms = (time.monotonic() - started) * 1000
        if worker.is_alive():
            return CompletionResponse(stop_reason="timeout", model=self.model)
        error = outcome.get("error")
        if isinstance(error, TargetExit | SystemExit):
            raise ProviderError(f"python target {self._target.function} {_exited(error)}")
        if error is not None:
            raise ProviderError(
                f"python target {self._target.function} raised {type(error).__name__}: "
                + safe_text(_text_of(error), 2000)
            )
        return to_response(
            outcome.get("reply"),
            what=f"python target {self._target.function}",
            model=self.model,
            elapsed_ms=elapsed_ms,
            limit=self._target.max_reply_bytes,
        )

    def close(self) -> None:
        if self._open:
            self._open = False
            inprocess.uninstall()


def _exited(exc: BaseException) -> str:
    """What the application's attempt to end the process is reported as."""
    if isinstance(exc, TargetExit):
        return f"called os._exit({exc.status!r}), which would end evalctl with no results"
    return f"called sys.exit({getattr(exc, 'code', None)!r})"


def _text_of(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # an exception whose __str__ raises
        return "<unprintable>"
