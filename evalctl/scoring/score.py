"""Scoring one case: every check it has, in report order, as `CheckResult`s.

1. the kind's named checks the case selects (`case.checks`, by default all of the kind's),
   each left out where its `applies(case)` says so;
2. the suite's `output_schema`, as the check `output_schema`;
3. the case's `[[case.assert]]` assertions, each a check found by its type name, named and
   weighted as the case says (`evalctl.scoring.declared` parsed them).

Two declared checks with one name are told apart as `name #2`. The case's status from these
is `evalctl.scoring.verdict`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from evalctl.json_schema import validation_errors
from evalctl.results.models import CheckResult
from evalctl.scoring.answer import Answer
from evalctl.scoring.check import Check, ScoringContext

OUTPUT_SCHEMA_CHECK = "output_schema"

# A check by its type name (the process's registry: evalctl.plugin_loader.get_check).
CheckLookup = Callable[[str], "Check[Any] | None"]


def schema_result(schema: dict[str, Any], answer: Answer, name: str) -> CheckResult:
    """The answer's JSON against a JSON Schema: `json-schema` and `output_schema`."""
    expected = "JSON matching the schema"
    if not answer.has_json:
        return CheckResult(
            name=name, status="fail", expected=expected, actual=answer.text,
            message=answer.json_error,
        )  # fmt: skip
    errors = validation_errors(schema, answer.json)
    return CheckResult(
        name=name,
        status="fail" if errors else "pass",
        expected=expected,
        actual=answer.json,
        message="; ".join(errors),
    )


def _applies(check: Check[Any], ctx: ScoringContext) -> bool:
    applies = getattr(check, "applies", None)
    return not callable(applies) or bool(applies(ctx.case))


def kind_results(ctx: ScoringContext, checks: Mapping[str, Check[Any]]) -> list[CheckResult]:
    """The kind's named checks this case selects."""
    results = []
    for name in ctx.case.checks:
        check = checks.get(name)
        if check is None or not _applies(check, ctx):
            continue
        result = check.evaluate(check.params_model.model_validate({}), ctx)
        result.name = name
        results.append(result)
    return results


def declared_results(ctx: ScoringContext, lookup: CheckLookup) -> list[CheckResult]:
    """The checks the suite file declares: `output_schema`, then each assertion."""
    results: list[CheckResult] = []
    if ctx.suite.output_schema is not None:
        results.append(schema_result(ctx.suite.output_schema, ctx.answer, OUTPUT_SCHEMA_CHECK))
    for spec in ctx.case.assertions:
        check = lookup(spec.type)
        if check is None:  # the loader checked; a plugin can only vanish between processes
            results.append(
                CheckResult(
                    name=spec.name, status="fail", message=f"unknown assertion type {spec.type!r}"
                )
            )
            continue
        result = check.evaluate(spec.params, ctx)
        result.name = spec.name
        result.weight = None if spec.weight == 1.0 else spec.weight
        if not result.passed and not result.message:
            result.message = "failed"  # every failure says why; a plugin may forget to
        results.append(result)
    return _unique_names(results)


def score_case(
    ctx: ScoringContext, kind_checks: Mapping[str, Check[Any]], lookup: CheckLookup
) -> list[CheckResult]:
    """Every check of the case, in report order (the module docstring)."""
    return kind_results(ctx, kind_checks) + declared_results(ctx, lookup)


def _unique_names(results: list[CheckResult]) -> list[CheckResult]:
    """Two `contains` checks on one text: the second is `... #2`, since results key checks
    by name."""
    seen: dict[str, int] = {}
    for result in results:
        seen[result.name] = seen.get(result.name, 0) + 1
        if seen[result.name] > 1:
            result.name = f"{result.name} #{seen[result.name]}"
    return results
