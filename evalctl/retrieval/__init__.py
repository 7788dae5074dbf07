"""Retrieval suites (`kind = "retrieval"`): a case calls a tool directly, with no model, and
its assertions judge the scored rows the tool returned: min-score, ordered, distinct-from,
contains-row (docs/writing-suites.md, "Retrieval suites").

A built-in plugin (evalctl.builtin_plugins): `register` adds the kind and its assertion
types, which any suite may use on the first tool call it recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalctl.plugin import Registry, SuiteKind


def _kind() -> SuiteKind:
    from evalctl.retrieval.kind import KIND

    return KIND


def register(registry: Registry) -> None:
    from evalctl.retrieval.checks import CHECKS

    registry.add_kind("retrieval", _kind)
    for check in CHECKS:
        registry.add_check(check.type_name, check)
