"""Scoring one case: every check it has, in report order, as `CheckResult`s.

1. the kind's named checks the case selects (`case.checks`, by default all of the kind's),
   each left out where its `applies(case)` says so;
2. the suite's `output_schema`, as the check `output_schema`;
3. the case's `[[case.assert]]` assertions, each a check found by its type name, named and
   weighted as the case says (`evalctl.scoring.declared` parsed them).

Two declared checks with one name are told apart as `name #2`. The case's status from these
is `evalctl.scoring.verdict`.

A plugin's check (any check evalctl does not ship) runs on a thread of its own under the case's
deadline: one that raises, or that does not finish in time, ends in `error` naming its plugin,
and the run goes on. Python cannot stop a thread, so a stuck one stays (idle to the run) until
evalctl exits.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from evalctl.cases.schema import Case, SuiteTable
from evalctl.json_schema import validation_errors
from evalctl.results.models import CheckResult
from evalctl.scoring.answer import Answer
from evalctl.scoring.check import Check, ScoringContext

OUTPUT_SCHEMA_CHECK = "output_schema"

# A check by its type name (the process's registry: evalctl.plugin_loader.get_check).
CheckLookup = Callable[[str], "Check[Any] | None"]
# The plugin that registered an assertion type, by type name; None for evalctl's own.
PluginOf = Callable[[str], "str | None"]
# A plugin's check gets at least this long (or the case's whole limit, if shorter), even when
# the answer came at the deadline: an answer that arrived in time must not fail for want of it.
PLUGIN_CHECK_FLOOR_S = 10.0
# Without a case deadline (scoring outside a run) a plugin's check still ends here.
PLUGIN_CHECK_DEFAULT_S = 60.0


def _no_plugin(type_name: str) -> str | None:
    return None


@dataclass(frozen=True)
class CheckBounds:
    """What the runner knows about where checks come from and when the case ends."""

    # The plugin of each assertion type (None: built in, run inline).
    plugin_of: PluginOf = _no_plugin
    # The plugin of the suite's kind, whose named checks are then plugin code too.
    kind_plugin: str | None = None
    # When the case's time runs out (time.monotonic()); None: no case deadline.
    deadline: float | None = None
    # The least a plugin's check gets, however little of the case's time is left.
    floor_s: float = PLUGIN_CHECK_FLOOR_S

    def seconds(self) -> float:
        if self.deadline is None:
            return PLUGIN_CHECK_DEFAULT_S
        return max(self.floor_s, self.deadline - time.monotonic())


def evaluate(
    check: Check[Any], params: Any, ctx: ScoringContext, plugin: str | None, bounds: CheckBounds
) -> CheckResult:
    """`check.evaluate`, inline for evalctl's own checks; a plugin's under `bounds`, any
    exception or overrun its `error` naming the plugin."""
    if plugin is None:
        return check.evaluate(params, ctx)
    about = f"check {check.type_name!r} of plugin {plugin!r}"
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["result"] = check.evaluate(params, ctx)
        except SystemExit as exc:  # must not end evalctl, silently, with the plugin's code
            box["error"] = f"called sys.exit({exc.code!r})"
        except BaseException as exc:  # anything, KeyboardInterrupt too: on this thread it is
            # the check's own raise (Ctrl-C reaches the main thread), and unhandled here it
            # would print a raw thread traceback.
            box["error"] = f"raised {type(exc).__name__}: {exc}".rstrip(": ")

    seconds = bounds.seconds()
    # A daemon thread: one that never returns must not hold evalctl's exit.
    worker = threading.Thread(target=run, name=f"check-{check.type_name}", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        return CheckResult(
            name=check.type_name,
            status="error",
            message=f"{about} did not finish in {seconds:g} s",
        )
    if "error" in box:
        return CheckResult(name=check.type_name, status="error", message=f"{about} {box['error']}")
    result = box.get("result")
    if not isinstance(result, CheckResult):
        return CheckResult(
            name=check.type_name,
            status="error",
            message=f"{about} returned {type(result).__name__}, not a CheckResult",
        )
    return result


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
    return check.applies(ctx.case)


def kind_results(
    ctx: ScoringContext, checks: Mapping[str, Check[Any]], bounds: CheckBounds | None = None
) -> list[CheckResult]:
    """The kind's named checks this case selects."""
    bounds = bounds or CheckBounds()
    results = []
    for name in ctx.case.checks:
        check = checks.get(name)
        if check is None or not _applies(check, ctx):
            continue
        params = check.params_model.model_validate({})
        result = evaluate(check, params, ctx, bounds.kind_plugin, bounds)
        result.name = name
        results.append(result)
    return results


def declared_names(suite: SuiteTable, case: Case) -> list[str]:
    """The names the declared checks' results carry, in order: `output_schema` when the
    suite has one, then each assertion's, the second of one name `... #2` (results key
    checks by name). A check learns its own as `ctx.check_name`; the judge addresses its
    request with it, so a reply script can answer two judges of one case differently."""
    names = [OUTPUT_SCHEMA_CHECK] if suite.output_schema is not None else []
    names += [spec.name for spec in case.assertions]
    seen: dict[str, int] = {}
    unique = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        unique.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return unique


def declared_results(
    ctx: ScoringContext, lookup: CheckLookup, bounds: CheckBounds | None = None
) -> list[CheckResult]:
    """The checks the suite file declares: `output_schema`, then each assertion."""
    bounds = bounds or CheckBounds()
    names = iter(declared_names(ctx.suite, ctx.case))
    results: list[CheckResult] = []
    if ctx.suite.output_schema is not None:
        results.append(schema_result(ctx.suite.output_schema, ctx.answer, next(names)))
    for spec, name in zip(ctx.case.assertions, names, strict=True):
        check = lookup(spec.type)
        if check is None:  # the loader checked; a plugin can only vanish between processes
            results.append(
                CheckResult(
                    name=name, status="fail", message=f"unknown assertion type {spec.type!r}"
                )
            )
            continue
        own = replace(ctx, check_name=name)
        result = evaluate(check, spec.params, own, bounds.plugin_of(spec.type), bounds)
        result.name = name
        result.weight = None if spec.weight == 1.0 else spec.weight
        if not result.passed and not result.message:
            result.message = "failed"  # every failure says why; a plugin may forget to
        results.append(result)
    return results


def score_case(
    ctx: ScoringContext,
    kind_checks: Mapping[str, Check[Any]],
    lookup: CheckLookup,
    bounds: CheckBounds | None = None,
) -> list[CheckResult]:
    """Every check of the case, in report order (the module docstring)."""
    return kind_results(ctx, kind_checks, bounds) + declared_results(ctx, lookup, bounds)
