"""Reading run results for a comparison: statuses, checks and figures, conversations skipped.

`compare` reads a case's status, checks, attempts and figures, never its conversation
(`document.CONVERSATION_FIELDS`), which is most of a results file (about 80% of a
10,000-case one). The general reader (`load_document(skip_conversations=True)` then
`run_from_document`) parses the whole file into Python objects before dropping it; this one
validates the file's bytes in pydantic-core against `RunResult` with each conversation field
accepted and skipped, so the conversations are never built as Python objects.

It is a fast path, never a second set of rules: it returns the `RunResult` the general reader
would return, or None wherever it cannot vouch for that (anything invalid, a missing
`schema_version`, data nested too deep, a conversation field of an unexpected shape), and the
caller then reads the file the general way, which words the error. A file of an older
version, or one with a scored case without attempts, is read the general way here, which
upgrades it (results.versions). Garbage collection is
paused while it builds the objects (hundreds of thousands of them, none of them garbage).
"""

from __future__ import annotations

import copy
import gc
import types
import typing
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Annotated, Any, NamedTuple, Union, get_args, get_origin

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    create_model,
)

from evalctl import userfiles
from evalctl.errors import BadInputError
from evalctl.results.document import CONVERSATION_FIELDS, load_document, resolve_results_path
from evalctl.results.models import SCORED, CaseResult, RunResult
from evalctl.results.versions import RUN_VERSION, supported

# What `load_document(skip_conversations=True)` drops: each case's conversation fields and
# its prompt reference, and the run's table of system prompts.
CASE_DROPPED = CONVERSATION_FIELDS | {"system_prompt"}
RUN_DROPPED = frozenset({"system_prompts"})
# Where a value of `Any` type sits in a document, in levels below its root (`userfiles`
# counts the root as 0): see `_free_form_fields`.
Step = str  # a field name, or "*" for every item of a list or value of a dict


class _Skipped(BaseModel):
    """A conversation record: an object whose content is not read (never built in Python)."""

    model_config = ConfigDict(extra="ignore")


# The shapes a conversation field has in files evalctl writes: a list of records (transcript,
# tool calls), one record (input, daemon), text (output, the prompt reference), or null.
# Anything else is left to the general reader, which drops whatever is there.
_Dropped = Annotated[
    Union[list[_Skipped], _Skipped, str, None],  # noqa: UP007 (a runtime type expression)
    Field(default=None),
]


def _not_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("a version is a number")
    return value


class FreeForm(NamedTuple):
    """A field of `Any` type: the steps to it from the run, and its depth in the document."""

    steps: tuple[Step, ...]
    depth: int


@cache
def _lean_models() -> tuple[type[RunResult], dict[str, Any]]:
    """`RunResult` with the conversation fields skipped, and the dropped fields' defaults.
    Subclasses, so every other field, validator and setting is the real model's."""
    dropped: dict[str, Any] = {name: (_Dropped, None) for name in CASE_DROPPED}
    lean_case = create_model("_ScoredCase", __base__=CaseResult, **dropped)
    version = RunResult.model_fields["schema_version"].annotation
    run_fields: dict[str, Any] = {
        "cases": (list[lean_case], Field(default_factory=list)),
        # Required, and strict: the general reader refuses a file without one, and `true`,
        # which lax validation would take for 1.
        "schema_version": (Annotated[version, BeforeValidator(_not_bool)], ...),
        **{name: (_Dropped, None) for name in RUN_DROPPED},
    }
    lean_run = create_model("_ScoredRun", __base__=RunResult, **run_fields)
    defaults = {
        name: CaseResult.model_fields[name].get_default(call_default_factory=True)
        for name in CASE_DROPPED
    }
    return lean_run, defaults


def _members(annotation: Any) -> Iterator[tuple[Any, bool]]:
    """The types inside `annotation`, each with whether it sits one level down (an item of a
    list, a value of a dict) rather than in place (a member of a union)."""
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin in (Union, types.UnionType):
        for arg in args:
            yield arg, False
    elif origin is list:
        yield args[0], True
    elif origin is dict:
        yield args[1], True
    elif origin is typing.Annotated:
        yield args[0], False


@cache
def _free_form_fields() -> tuple[FreeForm, ...]:
    """Every field of `Any` type in the part of run results a comparison keeps: only those
    can nest without bound, so only those need the general reader's nesting check."""
    found: list[FreeForm] = []

    def walk(annotation: Any, steps: tuple[Step, ...], depth: int) -> None:
        if annotation is Any:
            found.append(FreeForm(steps, depth))
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
            dropped = CASE_DROPPED if annotation is CaseResult else frozenset()
            if annotation is RunResult:
                dropped = RUN_DROPPED
            for name, info in annotation.model_fields.items():
                if name not in dropped:
                    walk(info.annotation, (*steps, name), depth + 1)
        else:
            for member, down in _members(annotation):
                walk(member, (*steps, "*") if down else steps, depth + down)

    walk(RunResult, (), 0)
    return tuple(found)


def _values(run: RunResult, steps: tuple[Step, ...]) -> list[Any]:
    """The values at `steps` below `run`, level by level (a list per level, no recursion)."""
    nodes: list[Any] = [run]
    for step in steps:
        if step == "*":
            nodes = [
                item
                for node in nodes
                if node is not None
                for item in (node.values() if isinstance(node, dict) else node)
            ]
        else:
            nodes = [getattr(node, step) for node in nodes if node is not None]
    return nodes


def _too_deep(run: RunResult) -> bool:
    """Whether a free-form value reaches deeper than `userfiles.check_nesting` allows, counted
    from the document's root as it counts (one stack for all of them: most are scalars)."""
    limit = userfiles.MAX_NESTING
    stack = [
        (value, field.depth)
        for field in _free_form_fields()
        for value in _values(run, field.steps)
        if isinstance(value, (dict, list))
    ]
    while stack:
        value, depth = stack.pop()
        items = value.values() if isinstance(value, dict) else value
        if depth > limit or (items and depth + 1 > limit):
            return True
        stack.extend((item, depth + 1) for item in items if isinstance(item, (dict, list)))
    return False


def _real(lean: RunResult, defaults: dict[str, Any]) -> RunResult:
    """The `RunResult` the general reader builds: the same values, the dropped fields at their
    defaults and not counted as set."""
    cases = []
    for case in lean.cases:
        values = dict(case.__dict__)  # the fields' values, as validated
        values.update({name: copy.copy(value) for name, value in defaults.items()})
        fields_set = case.model_fields_set - CASE_DROPPED
        cases.append(CaseResult.model_construct(fields_set, **values))
    values = dict(lean.__dict__)
    values.update(cases=cases, system_prompts={})
    return RunResult.model_construct(lean.model_fields_set - RUN_DROPPED, **values)


def read_scores(path: Path) -> RunResult | None:
    """Run results as a comparison reads them, conversations left at their defaults; None
    when the file is anything but run results this reader can vouch for (read it with
    `load_document(path, skip_conversations=True)` and `run_from_document`, which say why).
    A file the general reader would upgrade (an older version, a scored case without
    attempts: results.versions) is read by the general reader here."""
    path = resolve_results_path(path)
    try:
        raw = userfiles.read_bytes(path)
    except BadInputError:
        return None
    lean_run, defaults = _lean_models()
    paused = gc.isenabled()
    gc.disable()
    try:
        # Valid JSON (UTF-8 throughout, conversations included), a JSON object whose `kind`
        # is "run" or absent (a baseline's `baselines` is an unknown key here) and which has a
        # `run_id`: run results, by `document.detect_kind`'s rules too.
        try:
            lean = lean_run.model_validate_json(raw)
        except ValidationError:
            return _general(path) if _older_version(raw) else None
        if _too_deep(lean):
            return None
        if any(c.status in SCORED and not c.attempts for c in lean.cases):
            return _general(path)
        return _real(lean, defaults)
    except (ValidationError, ValueError, RecursionError):
        return None
    finally:
        if paused:
            gc.enable()


class _Version(BaseModel):
    """Only a document's version (the rest is parsed, never built in Python)."""

    model_config = ConfigDict(extra="ignore")
    schema_version: Annotated[int, BeforeValidator(_not_bool)]


def _older_version(raw: bytes) -> bool:
    """Whether `raw` is a JSON object of a version older than the current one, which the
    general reader upgrades (results.versions)."""
    try:
        version = _Version.model_validate_json(raw).schema_version
    except (ValidationError, ValueError, RecursionError):
        return False
    return version in supported("run") and version != RUN_VERSION


def _general(path: Path) -> RunResult | None:
    """The general reader's result; None where it refuses the file (it says why)."""
    from evalctl.results.io import run_from_document

    try:
        return run_from_document(load_document(path, skip_conversations=True))
    except BadInputError:
        return None
