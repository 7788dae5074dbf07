"""Every JSON schema the shipped suites send is tight: a constrained decoder can always end.

A string without `maxLength` (or an `enum`) and an object whose extra values may be any
JSON let a small model write until max_tokens inside one value; the grammar enforces these
bounds, so they are what keeps a case from running away.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evalctl.cases.loader import load_suite
from evalctl.plugin_loader import get_kind, get_tools

CASES = Path(__file__).resolve().parents[1] / "cases"
SHIPPED = sorted(CASES.glob("*.toml"))


def _schemas(path: Path) -> list[tuple[str, dict[str, Any]]]:
    suite = load_suite(path)
    table = suite.table
    found = [
        (f"tool {name}", tool.definition.parameters)
        for name, tool in get_tools(table.tools).items()
    ]
    kind = get_kind(table.kind)
    assert kind is not None
    for case in suite.cases:
        shape = kind.request_shape(table, case)
        if shape.json_schema is not None:
            found.append((f"answer of {case.key}", shape.json_schema))
    return found


def _loose(schema: Any, where: str) -> list[str]:
    """Paths of the parts of `schema` a decoder could keep writing in forever."""
    if not isinstance(schema, dict):
        return []
    problems = []
    kind = schema.get("type")
    if kind == "string" and "enum" not in schema and "maxLength" not in schema:
        problems.append(f"{where}: string without maxLength or enum")
    if kind == "object":
        extra = schema.get("additionalProperties", True)
        if extra is True or extra == {}:
            problems.append(f"{where}: object whose extra properties may be anything")
        elif isinstance(extra, dict):
            problems += _loose(extra, f"{where}.<value>")
        for name, sub in schema.get("properties", {}).items():
            problems += _loose(sub, f"{where}.{name}")
    if kind == "array":
        if "maxItems" not in schema:
            problems.append(f"{where}: array without maxItems")
        problems += _loose(schema.get("items"), f"{where}[]")
    return problems


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_shipped_schema_is_bounded(path: Path) -> None:
    schemas = _schemas(path)
    assert schemas, f"{path.name} sends no schema at all"
    problems = [p for where, schema in schemas for p in _loose(schema, where)]
    assert problems == []


def test_the_check_itself_finds_loose_schemas() -> None:
    loose = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "m": {"type": "object"}},
        "additionalProperties": False,
    }
    assert _loose(loose, "x") == [
        "x.a: string without maxLength or enum",
        "x.m: object whose extra properties may be anything",
    ]


def test_release_assets_mapping_keys_are_names_the_recipe_accepts() -> None:
    from evalctl.suites.release_assets import recipe, tools

    assert set(tools.PROMPTED_OS) <= set(recipe.CANONICAL_OS)
    assert set(tools.PROMPTED_ARCH) <= set(recipe.CANONICAL_ARCH)
