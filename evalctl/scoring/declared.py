"""Parsing `[[case.assert]]` tables into `AssertionSpec`s, with every error located.

Common to every type: `type`, `weight`, and the check's name (`name`, or `check_name` for
types whose own `name` key means something else, such as tool-called). The rest are the
check's parameters, validated by its `params_model`. The checks are looked up through
`CheckTypes` (the process's registry, handed in by the suite loader).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from evalctl.cases.schema import AssertionSpec
from evalctl.scoring.check import Check
from evalctl.scoring.score import CheckLookup
from evalctl.userfiles import field_path, validation_message

# (field path below the assertion, message)
Problem = tuple[str, str]


@dataclass(frozen=True)
class CheckTypes:
    """The assertion types a suite may use: a lookup by type name, and every name."""

    lookup: CheckLookup
    names: Callable[[], list[str]]


def default_name(check: Check[Any], params: BaseModel) -> str:
    """A check's name when the case gives none."""
    return check.default_name(params)


def tools_named(check: Check[Any], params: BaseModel) -> list[tuple[str, str]]:
    """(key, tool) pairs the parameters refer to, where the check says."""
    return check.tools_named(params)


def arguments_named(check: Check[Any], params: BaseModel) -> list[tuple[str, str, str]]:
    """(key, tool, argument) triples the parameters expect, where the check says."""
    return check.arguments_named(params)


def cases_named(check: Check[Any], params: BaseModel) -> list[tuple[str, str]]:
    """(key, case id) pairs of other cases the parameters refer to, where the check says."""
    return check.cases_named(params)


def parse_assertion(
    raw: Any,
    types: CheckTypes,
    tools: list[str] | None,
    tool_args: Mapping[str, Collection[str]] | None = None,
    other_cases: Collection[str] | None = None,
    suite_dir: Path | None = None,
) -> tuple[AssertionSpec | None, list[Problem]]:
    """One `[[case.assert]]` table. `tools`, when given, are the suite's tool names: an
    assertion about any other tool is an error. `tool_args` maps a tool to its argument
    names, where they are known: expecting any other argument is an error too. `other_cases`,
    when given, are the ids of the suite's other cases: naming any other case is an error.
    `suite_dir`, the suite file's folder, is the validation context's `suite_dir`: the
    parameters resolve a file they name against it (names-in's `names_from`)."""
    if not isinstance(raw, dict):
        return None, [("", "must be a table")]
    data = dict(raw)
    type_name = data.pop("type", None)
    if type_name is None:
        known = ", ".join(types.names())
        return None, [(".type", f"required key is missing (one of: {known})")]
    check = types.lookup(type_name) if isinstance(type_name, str) else None
    if check is None:
        known = ", ".join(types.names())
        return None, [(".type", f"unknown assertion type {type_name!r} (known: {known})")]
    problems: list[Problem] = []
    weight = data.pop("weight", 1.0)
    if (
        isinstance(weight, bool)
        or not isinstance(weight, int | float)
        or not math.isfinite(weight)  # TOML has nan and inf; a share of nan is no share
        or weight <= 0
    ):
        problems.append((".weight", "must be a finite number above 0"))
    # Types with a `name` parameter of their own take the check's name as `check_name`.
    name_key = "check_name" if "name" in check.params_model.model_fields else "name"
    name = data.pop(name_key, None)
    if name is not None and (not isinstance(name, str) or not name.strip()):
        problems.append((f".{name_key}", "must be a non-empty string"))
    try:
        context = {"suite_dir": suite_dir} if suite_dir is not None else None
        params = check.params_model.model_validate(data, context=context)
    except ValidationError as exc:
        problems.extend(
            (field_path(e["loc"], below=True), validation_message(e)) for e in exc.errors()
        )
        return None, problems
    if tools is not None:
        for key, tool in tools_named(check, params):
            if tool not in tools:
                known = ", ".join(tools) or "none"
                problems.append((f".{key}", f"unknown tool {tool!r} (suite tools: {known})"))
    for key, tool, arg in arguments_named(check, params):
        known_args = (tool_args or {}).get(tool)
        if known_args is not None and arg not in known_args:
            listed = ", ".join(known_args) or "none"
            problems.append((f".{key}", f"{tool!r} has no parameter {arg!r} (known: {listed})"))
    if other_cases is not None:
        for key, case_id in cases_named(check, params):
            if case_id not in other_cases:
                known = ", ".join(sorted(other_cases)) or "none"
                problems.append(
                    (f".{key}", f"{case_id!r} is not another case of this suite (others: {known})")
                )
    if problems:
        return None, problems
    spec = AssertionSpec(
        type=type_name,
        params=params,
        name=name or default_name(check, params),
        weight=float(weight),
    )
    return spec, []


def parse_assertions(
    items: list[Any],
    types: CheckTypes,
    tools: list[str] | None,
    tool_args: Mapping[str, Collection[str]] | None = None,
    other_cases: Collection[str] | None = None,
    suite_dir: Path | None = None,
) -> tuple[list[AssertionSpec], list[Problem]]:
    """Every table of a case, with every problem, field paths numbered from 1."""
    specs: list[AssertionSpec] = []
    problems: list[Problem] = []
    for index, raw in enumerate(items, start=1):
        spec, found = parse_assertion(raw, types, tools, tool_args, other_cases, suite_dir)
        problems.extend((f"[{index}]{field}", message) for field, message in found)
        if spec is not None:
            specs.append(spec)
    names = [s.name for s in specs]
    for dup in sorted({n for n in names if names.count(n) > 1}):
        explicit = [
            i
            for i, raw in enumerate(items, start=1)
            if isinstance(raw, dict) and dup in (raw.get("name"), raw.get("check_name"))
        ]
        if len(explicit) > 1:
            problems.append((f"[{explicit[1]}]", f"check name {dup!r} is used twice in this case"))
    return specs, problems
