"""From `[[case.assert]]` tables to named checks: parsing (with every error located) and
scoring. Common to every type: `type`, `weight`, and the check's name (`name`, or
`check_name` for types whose own `name` key means something else, such as tool-called)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from pydantic import ValidationError

from evalctl.assertions.base import Evidence
from evalctl.assertions.json_checks import check_schema
from evalctl.assertions.registry import (
    arguments_named,
    check_names,
    default_name,
    get_check,
    tools_named,
)
from evalctl.cases.schema import AssertionSpec, Case, SuiteTable
from evalctl.results.models import CheckResult
from evalctl.scoring.kinds import Transcript
from evalctl.userfiles import field_path, validation_message

OUTPUT_SCHEMA_CHECK = "output_schema"

# (field path below the assertion, message)
Problem = tuple[str, str]


def parse_assertion(
    raw: Any,
    tools: list[str] | None,
    tool_args: Mapping[str, Collection[str]] | None = None,
) -> tuple[AssertionSpec | None, list[Problem]]:
    """One `[[case.assert]]` table. `tools`, when given, are the suite's tool names: an
    assertion about any other tool is an error. `tool_args` maps a tool to its argument
    names, where they are known: expecting any other argument is an error too."""
    if not isinstance(raw, dict):
        return None, [("", "must be a table")]
    data = dict(raw)
    type_name = data.pop("type", None)
    if type_name is None:
        return None, [(".type", f"required key is missing (one of: {', '.join(check_names())})")]
    check = get_check(type_name) if isinstance(type_name, str) else None
    if check is None:
        return None, [
            (".type", f"unknown assertion type {type_name!r} (known: {', '.join(check_names())})")
        ]
    problems: list[Problem] = []
    weight = data.pop("weight", 1.0)
    if isinstance(weight, bool) or not isinstance(weight, int | float) or weight <= 0:
        problems.append((".weight", "must be a number above 0"))
    # Types with a `name` parameter of their own take the check's name as `check_name`.
    name_key = "check_name" if "name" in check.params_model.model_fields else "name"
    name = data.pop(name_key, None)
    if name is not None and (not isinstance(name, str) or not name.strip()):
        problems.append((f".{name_key}", "must be a non-empty string"))
    try:
        params = check.params_model.model_validate(data)
    except ValidationError as exc:
        problems.extend(
            (field_path(e["loc"], below=True), validation_message(e)) for e in exc.errors()
        )
        return None, problems
    if tools is not None:
        for key, tool in tools_named(params):
            if tool not in tools:
                known = ", ".join(tools) or "none"
                problems.append((f".{key}", f"unknown tool {tool!r} (suite tools: {known})"))
    for key, tool, arg in arguments_named(params):
        known_args = (tool_args or {}).get(tool)
        if known_args is not None and arg not in known_args:
            listed = ", ".join(known_args) or "none"
            problems.append((f".{key}", f"{tool!r} has no parameter {arg!r} (known: {listed})"))
    if problems:
        return None, problems
    spec = AssertionSpec(
        type=type_name,
        params=params,
        name=name or default_name(type_name, params),
        weight=float(weight),
    )
    return spec, []


def parse_assertions(
    items: list[Any],
    tools: list[str] | None,
    tool_args: Mapping[str, Collection[str]] | None = None,
) -> tuple[list[AssertionSpec], list[Problem]]:
    """Every table of a case, with every problem, field paths numbered from 1."""
    specs: list[AssertionSpec] = []
    problems: list[Problem] = []
    for index, raw in enumerate(items, start=1):
        spec, found = parse_assertion(raw, tools, tool_args)
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


def score_declared(table: SuiteTable, case: Case, transcript: Transcript) -> list[CheckResult]:
    """The checks a suite file declares itself: `output_schema`, then each assertion."""
    results: list[CheckResult] = []
    if table.output_schema is not None:
        evidence = Evidence(transcript.final_text, transcript.tool_calls)
        outcome = check_schema(table.output_schema, evidence)
        results.append(
            CheckResult(
                name=OUTPUT_SCHEMA_CHECK,
                passed=outcome.passed,
                expected=outcome.expected,
                actual=outcome.actual,
                message=outcome.reason,
            )
        )
    for spec in case.assertions:
        check = get_check(spec.type)
        if check is None:  # the loader checked; a plugin can only vanish between processes
            results.append(
                CheckResult(
                    name=spec.name, passed=False, message=f"unknown assertion type {spec.type!r}"
                )
            )
            continue
        result = check.evaluate(spec.params, transcript)
        result.name = spec.name
        result.weight = None if spec.weight == 1.0 else spec.weight
        if not result.passed and not result.message:
            result.message = "failed"  # every failure says why; a plugin may forget to
        results.append(result)
    return _unique_names(results)


def _unique_names(results: list[CheckResult]) -> list[CheckResult]:
    """Two `contains` checks on one text: the second is `... #2`, since results key checks
    by name."""
    seen: dict[str, int] = {}
    for result in results:
        seen[result.name] = seen.get(result.name, 0) + 1
        if seen[result.name] > 1:
            result.name = f"{result.name} #{seen[result.name]}"
    return results
