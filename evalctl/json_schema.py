"""JSON Schema checking through the `jsonschema` package, imported on first use."""

from __future__ import annotations

from typing import Any


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why `schema` is not a valid JSON Schema, or None."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        return f"invalid JSON Schema: {exc.message}" + (f" (at {where})" if where else "")
    return None


def validation_errors(schema: dict[str, Any], value: Any, limit: int = 5) -> list[str]:
    """Every way `value` breaks `schema` (the first `limit`), each with its JSON path."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema)
    errors = sorted(cls(schema).iter_errors(value), key=lambda e: list(e.absolute_path))
    out = []
    for err in errors[:limit]:
        where = ".".join(str(p) for p in err.absolute_path) or "(root)"
        out.append(f"{where}: {err.message}")
    return out
