"""Declarative assertions for `kind = "assert"` suites: one module per family (text, JSON,
tool use, the path of the calls (trajectory), tool results, grounding, catalog names,
metrics, similar), each assertion type a `Check` (evalctl.scoring.check) that turns into one
named check.

A built-in plugin (evalctl.builtin_plugins): `register` adds the `assert` kind and every
family's `CHECKS`, each under the `type_name` its class names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalctl.plugin import Registry, SuiteKind


def _kind() -> SuiteKind:
    from evalctl.assertions.kind import KIND

    return KIND


def register(registry: Registry) -> None:
    # The families are small and pull in nothing heavy (jsonschema loads on first use), so
    # they are imported here: the type names come from the classes themselves.
    from evalctl.assertions import (
        grounding,
        json_checks,
        metrics,
        names_in,
        similar,
        text,
        tool_result,
        tool_use,
        trajectory,
    )

    registry.add_kind("assert", _kind)
    families = (
        text, json_checks, tool_use, trajectory, tool_result, grounding, names_in, metrics,
        similar,
    )  # fmt: skip
    for family in families:
        for check in family.CHECKS:
            registry.add_check(check.type_name, check)
