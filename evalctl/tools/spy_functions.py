"""The spy on your own functions (`[[suite.spy]]`): each call the application makes to a
spied function during a case is recorded as a tool call of that case, with its arguments, its
return value or exception, and its duration, so `tool-called`, `tool-not-called`,
`cites-tool-result` and grounding judge the application's own tools. The real function runs.

How: for the duration of a case the function is replaced by a wrapper, where it is looked up:
the module attribute (and every other loaded module's global bound to the same function, so
`from app.tools import search` done before the case is covered too), or the class attribute
for `module:Class.method`. The wrapper records into the log the runner opened for the case
(evalctl.calllog). Cases running at once share one wrapper (a count of users); each call
lands in the log of the case whose thread made it.

What it cannot see: calls in another process (a worker pool, a subprocess, a server the app
calls), and references it cannot find: a function kept in a dict or a closure before the
case, or a bound method taken from an instance before the case.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from evalctl.calllog import LoggedCall, collecting, current, record, recordable, safe_text
from evalctl.cases.schema import SpyDecl, Suite
from evalctl.errors import BadInputError
from evalctl.providers.targets.importing import ImportProblem, import_module, split_spec
from evalctl.results.models import ToolCallRecord
from evalctl.tools.base import capped


def jsonable(value: Any) -> Any:
    """`value` as bounded JSON data (evalctl.calllog.recordable): tuples and rows become
    lists, dataclasses and pydantic models their fields, anything else its repr; cycles,
    tuple keys and huge values recorded, cut, without raising."""
    return recordable(value)


def _arguments(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any], skip: int
) -> dict[str, Any]:
    """The call's arguments by parameter name (`self`/`cls` left out), **kwargs spread."""
    if signature is None:
        return _json_object({"args": list(args[skip:]), **kwargs})
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return _json_object({"args": list(args[skip:]), **kwargs})
    named: dict[str, Any] = {}
    for index, (name, value) in enumerate(bound.arguments.items()):
        if index < skip:
            continue
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            named.update(value)
        else:
            named[name] = list(value) if kind is inspect.Parameter.VAR_POSITIONAL else value
    return _json_object(named)


def _normalized(
    signature: inspect.Signature | None, args: tuple[Any, ...], kwargs: dict[str, Any], skip: int
) -> dict[str, Any] | None:
    """The arguments as the signature binds them with its defaults applied, by parameter
    name as `_arguments` gives them; None when there is no signature or they do not bind."""
    if signature is None:
        return None
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return None
    bound.apply_defaults()
    return _arguments(signature, bound.args, bound.kwargs, skip)


def _json_object(value: dict[str, Any]) -> dict[str, Any]:
    data = recordable(value)
    return data if isinstance(data, dict) else {"args": data}


# Set on a thread while its spy records a call: a spied function that recording itself uses
# (evalctl's own `json.dumps`, say) then runs as itself, unrecorded, instead of recursing.
_recording = threading.local()


def _wrap(original: Callable[..., Any], tool: str, skip: int) -> Callable[..., Any]:
    try:
        signature: inspect.Signature | None = inspect.signature(original)
    except (TypeError, ValueError):
        signature = None

    def log(
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        started: float,
        outcome: Callable[[], dict[str, Any]],
    ) -> None:
        # Whatever goes wrong here is the spy's problem, never the application's: the call
        # it watched has already happened, and its result or exception goes back untouched.
        if getattr(_recording, "active", False):
            return
        _recording.active = True
        try:
            if current() is None:
                return  # no case is collecting: the call is the application's business only
            record(
                LoggedCall(
                    name=tool,
                    arguments=_arguments(signature, args, kwargs, skip),
                    normalized_arguments=_normalized(signature, args, kwargs, skip),
                    duration_ms=round((time.perf_counter() - started) * 1000, 3),
                    **outcome(),
                )
            )
        except Exception:
            pass
        finally:
            _recording.active = False

    def returned(value: Any) -> Callable[[], dict[str, Any]]:
        def fields() -> dict[str, Any]:
            data = recordable(value)
            text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
            return {"result": text, "value": data}

        return fields

    def raised(exc: BaseException) -> Callable[[], dict[str, Any]]:
        def fields() -> dict[str, Any]:
            try:
                message = safe_text(f"error: {type(exc).__name__}: {exc}", 10_000)
            except Exception:  # an exception whose str() raises
                message = f"error: {type(exc).__name__}"
            return {"result": message, "is_error": True}

        return fields

    if inspect.iscoroutinefunction(original):

        @functools.wraps(original)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            if getattr(_recording, "active", False):
                return await original(*args, **kwargs)
            started = time.perf_counter()
            try:
                value = await original(*args, **kwargs)
            except BaseException as exc:
                log(args, kwargs, started, raised(exc))
                raise
            log(args, kwargs, started, returned(value))
            return value

        return async_wrapper

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if getattr(_recording, "active", False):
            return original(*args, **kwargs)
        started = time.perf_counter()
        try:
            value = original(*args, **kwargs)
        except BaseException as exc:
            log(args, kwargs, started, raised(exc))
            raise
        log(args, kwargs, started, returned(value))
        return value

    return wrapper


@dataclasses.dataclass
class _Patch:
    """One installed wrapper: where it was put, what it replaced, how many cases use it."""

    places: list[tuple[Any, str, Any, bool]]  # (owner, attribute, original, was it own)
    users: int = 0

    def remove(self) -> None:
        for owner, attr, original, own in reversed(self.places):
            if own:
                setattr(owner, attr, original)
            else:  # an inherited method: the class goes back to inheriting it
                delattr(owner, attr)


def _install(spy: SpyDecl, suite_dir: Path) -> _Patch:
    module_name, attrs = split_spec(spy.function)
    owner: Any = import_module(module_name, suite_dir)
    for attr in attrs[:-1]:
        if not hasattr(owner, attr):
            raise ImportProblem(f"{module_name} has no attribute {attr!r}")
        owner = getattr(owner, attr)
    name = attrs[-1]
    if isinstance(owner, type):
        return _install_method(owner, name, spy)
    original = getattr(owner, name, None)
    if original is None or not callable(original):
        raise ImportProblem(f"{spy.function} is not a function of {module_name}")
    wrapper = _wrap(original, spy.tool_name, 0)
    places: list[tuple[Any, str, Any, bool]] = [(owner, name, original, True)]
    # `from app.tools import search` binds the function in the importing module too.
    for module in list(sys.modules.values()):
        if module is owner or module is None:
            continue
        try:
            names = [a for a, v in list(vars(module).items()) if v is original]
        except Exception:  # a lazy or odd module object: nothing of ours can be bound there
            continue
        places += [(module, attr, original, True) for attr in names]
    for where, attr, _, _ in places:
        setattr(where, attr, wrapper)
    return _Patch(places)


def _install_method(cls: type, name: str, spy: SpyDecl) -> _Patch:
    own = name in cls.__dict__
    raw = cls.__dict__[name] if own else inspect.getattr_static(cls, name, None)
    if isinstance(raw, staticmethod):
        replacement: Any = staticmethod(_wrap(raw.__func__, spy.tool_name, 0))
    elif isinstance(raw, classmethod):
        replacement = classmethod(_wrap(raw.__func__, spy.tool_name, 1))
    elif inspect.isfunction(raw):
        replacement = _wrap(raw, spy.tool_name, 1)
    else:
        raise ImportProblem(f"{spy.function} is not a method of {cls.__name__}")
    setattr(cls, name, replacement)
    return _Patch([(cls, name, raw, own)])


_lock = threading.Lock()
_patches: dict[tuple[str, str], _Patch] = {}


def _key(spy: SpyDecl, suite_dir: Path) -> tuple[str, str]:
    return (spy.function, str(suite_dir.resolve()))


@contextmanager
def spying(spies: list[SpyDecl], suite_dir: Path) -> Iterator[None]:
    """The functions wrapped while the block runs (shared with cases running at once)."""
    taken: list[tuple[str, str]] = []
    try:
        with _lock:
            for spy in spies:
                key = _key(spy, suite_dir)
                patch = _patches.get(key)
                if patch is None:
                    patch = _patches[key] = _install(spy, suite_dir)
                patch.users += 1
                taken.append(key)
        yield
    finally:
        with _lock:
            for key in reversed(taken):
                patch = _patches[key]
                patch.users -= 1
                if patch.users == 0:
                    patch.remove()
                    del _patches[key]


@contextmanager
def spied_calls(
    suite: Suite, case_vars: dict[str, Any] | None = None, case_input: dict[str, Any] | None = None
) -> Iterator[None]:
    """One attempt: a log open for the application's calls (with the case's vars and input,
    which a target hands on), its spies installed."""
    log = collecting(case_vars, case_input)
    with log, _named(suite), spying(suite.table.spy, suite.directory):
        yield


@contextmanager
def _named(suite: Suite) -> Iterator[None]:
    # Found before the run (check_spies), a function may still be gone by a later case: a
    # module edited mid-run. That is the suite's problem, named as such, not evalctl's.
    try:
        yield
    except ImportProblem as exc:
        raise BadInputError(str(exc), file=str(suite.path), field="suite.spy") from None


def logged_records(turn: int) -> list[ToolCallRecord]:
    """The calls logged so far in this attempt, as the case's tool call records."""
    log = current()
    if log is None:
        return []
    return [
        ToolCallRecord(
            turn=turn,
            name=call.name,
            arguments=capped(call.arguments),
            result=call.result,
            data={"value": capped(call.value)} if not call.is_error else {},
            is_error=call.is_error,
            duration_ms=call.duration_ms,
            normalized_arguments=(
                capped(call.normalized_arguments) if call.normalized_arguments is not None else None
            ),
        )
        for call in log.calls()
    ]


def refusal(function: str) -> str | None:
    """Why `module:function` may not be spied, or None. evalctl runs in the same process as
    the application: a spy on a module evalctl itself uses (the standard library, evalctl,
    the packages it depends on) would record evalctl's own calls as the case's and wrap the
    code that writes the results."""
    module = split_spec(function)[0]
    top = module.partition(".")[0]
    if top in sys.stdlib_module_names:
        owner = "the standard library"
    elif top == "evalctl":
        owner = "evalctl itself"
    elif top in _dependencies():
        owner = f"{_dependencies()[top]}, a package evalctl depends on"
    else:
        return None
    return (
        f"{function} is in {module}, part of {owner}, which evalctl uses too: spying it "
        "would record evalctl's own calls; spy your application's own functions "
        "(the ones that call it)"
    )


@functools.cache
def _dependencies() -> dict[str, str]:
    """The top-level modules of every distribution evalctl depends on, directly or not,
    mapped to its name; empty where evalctl runs from a checkout without being installed."""
    try:
        seen: set[str] = set()
        todo = ["evalctl"]
        while todo:
            name = todo.pop()
            for requirement in metadata.requires(name) or []:
                if "extra ==" in requirement:
                    continue
                match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
                dist = _canonical(match.group(0)) if match else ""
                if dist and dist not in seen:
                    seen.add(dist)
                    with contextlib.suppress(metadata.PackageNotFoundError):
                        metadata.distribution(dist)
                        todo.append(dist)
        return {
            module: dists[0]
            for module, dists in metadata.packages_distributions().items()
            if any(_canonical(d) in seen for d in dists)
        }
    except Exception:  # broken metadata: the standard library and evalctl are still refused
        return {}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def check_spies(suites: list[Suite]) -> None:
    """Before a run: every spied function may be spied and can be found (exit 2 naming the
    suite file and the spy)."""
    for suite in suites:
        for index, spy in enumerate(suite.table.spy, start=1):
            why = refusal(spy.function)
            if why is not None:
                raise BadInputError(why, file=str(suite.path), field=f"suite.spy[{index}].function")
            try:
                with spying([spy], suite.directory):
                    pass
            except ImportProblem as exc:
                raise BadInputError(
                    str(exc), file=str(suite.path), field=f"suite.spy[{index}].function"
                ) from None
