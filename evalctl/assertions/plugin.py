"""The `assert` kind and the built-in assertion types, registered like any plugin
(`evalctl.plugin`). Each family module is imported only when one of its types is used."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from evalctl.plugin import Check, Registry, SuiteKind

# type name -> the family module that defines it (its ASSERTIONS table).
BUILTIN_TYPES: dict[str, str] = {
    "equals": "evalctl.assertions.text",
    "contains": "evalctl.assertions.text",
    "icontains": "evalctl.assertions.text",
    "not-contains": "evalctl.assertions.text",
    "regex": "evalctl.assertions.text",
    "json-valid": "evalctl.assertions.json_checks",
    "json-schema": "evalctl.assertions.json_checks",
    "json-field": "evalctl.assertions.json_checks",
    "tool-called": "evalctl.assertions.tool_use",
    "tool-not-called": "evalctl.assertions.tool_use",
    "cites-tool-result": "evalctl.assertions.grounding",
}


def _factory(type_name: str, module: str) -> Callable[[], Check]:
    def make() -> Check:
        from evalctl.assertions.registry import ModelCheck

        return ModelCheck(importlib.import_module(module).ASSERTIONS[type_name])

    return make


def _kind() -> SuiteKind:
    from evalctl.assertions.kind import KIND

    return KIND


def register(registry: Registry) -> None:
    registry.add_kind("assert", _kind)
    for type_name, module in BUILTIN_TYPES.items():
        registry.add_check(type_name, _factory(type_name, module))
