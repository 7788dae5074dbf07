"""JSON Schema checking through the `jsonschema` package, imported on first use.

A schema comes from a suite file, so what it may refer to is limited (docs/security.md):
- only references inside the schema itself (`#`, `#/$defs/x`, `#anchor`): a remote or file
  `$ref` is refused, and the validator is given a registry that retrieves nothing, so no
  schema ever makes evalctl open a URL or read a file;
- every reference must resolve;
- no reference cycle that stays on the same value (`{"$ref": "#"}`, or a `$defs` entry that
  refers to itself through `$ref`/`allOf`/...): checking any value against one would recurse
  forever. A cycle through `properties`/`items` is fine: each step goes one level into the
  value, and the value is finite.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

# Keywords whose subschemas apply to the same value as the schema holding them.
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MANY = ("allOf", "anyOf", "oneOf")
# Keywords that refer to another schema, and those that name a place to refer to.
_REFERENCES = ("$ref", "$dynamicRef", "$recursiveRef")
_ANCHORS = ("$anchor", "$dynamicAnchor")
# Keywords whose values are data, not schemas: a `{"$ref": ...}` in them refers to nothing.
_DATA = frozenset(("const", "enum", "default", "examples"))


def schema_problem(schema: dict[str, Any]) -> str | None:
    """Why `schema` is not a valid JSON Schema evalctl will check values against, or None."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        return f"invalid JSON Schema: {exc.message}" + (f" (at {where})" if where else "")
    return reference_problem(schema)


def validation_errors(schema: dict[str, Any], value: Any, limit: int = 5) -> list[str]:
    """Every way `value` breaks `schema` (the first `limit`), each with its JSON path."""
    import jsonschema
    import referencing
    import referencing.exceptions

    cls = jsonschema.validators.validator_for(schema)
    # `pattern` and `patternProperties` run the suite's regexes on the model's answer: under
    # a time limit, like the `regex` assertion, never Python's unbounded `re.search`.
    cls = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        cls, {"pattern": _bounded_pattern, "patternProperties": _bounded_pattern_properties}
    )
    # Given no registry, jsonschema falls back to fetching unknown URIs with urlopen. An
    # empty `Registry` retrieves nothing: whatever reaches here, nothing is ever fetched.
    registry: referencing.Registry[Any] = referencing.Registry()
    validator = cls(schema, registry=registry)
    try:
        errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    except (referencing.exceptions.Unresolvable, RecursionError) as exc:
        # What `schema_problem` cannot follow (a reference into an embedded `$id`): the
        # value fails with the reason, rather than the run ending on it.
        why = "it refers to itself without end" if isinstance(exc, RecursionError) else exc
        return [f"(schema): cannot be checked: {why}"]
    out = []
    for err in errors[:limit]:
        where = ".".join(str(p) for p in err.absolute_path) or "(root)"
        out.append(f"{where}: {err.message}")
    return out


# Seconds one schema `pattern` search may take (evalctl.assertions.pattern has the same).
PATTERN_TIMEOUT_S = 2.0


def _search(pattern: str, text: str) -> bool | None:
    """Whether `pattern` matches in `text`; None when the search ran past the limit."""
    import regex

    try:
        return regex.search(pattern, text, regex.VERSION0, timeout=PATTERN_TIMEOUT_S) is not None
    except TimeoutError:
        return None


def _too_slow(pattern: str) -> str:
    return (
        f"pattern {pattern!r} did not finish within {PATTERN_TIMEOUT_S:g}s on this value "
        "(catastrophic backtracking)"
    )


def _bounded_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "string"):
        return
    found = _search(pattern, instance)
    if found is None:
        yield ValidationError(_too_slow(pattern))
    elif not found:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _bounded_pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    from jsonschema import ValidationError

    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            found = _search(pattern, key)
            if found is None:
                yield ValidationError(_too_slow(pattern))
            elif found:
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def reference_problem(schema: dict[str, Any]) -> str | None:
    """A `$ref` that is remote, does not resolve, or loops on the same value; or None."""
    nodes = list(_subschemas(schema))
    ids = {_base(n["$id"]) for n, _ in nodes if isinstance(n.get("$id"), str)} - {""}
    # An embedded resource (a `$id` below the root) moves the base its references resolve
    # against: those are only checked for staying inside, the rest when values are checked.
    embedded = any(isinstance(n.get("$id"), str) and _base(n["$id"]) for n, _ in nodes[1:])
    anchors = {a: n for n, _ in nodes for a in _anchors_of(n)}
    targets: dict[int, list[dict[str, Any]]] = {}
    where_of: dict[int, str] = {}
    for node, where in nodes:
        where_of[id(node)] = where
        for keyword in _REFERENCES:
            ref = node.get(keyword)
            if not isinstance(ref, str):
                continue
            base, _, fragment = ref.partition("#")
            if base and base not in ids:
                return (
                    f"{keyword} {ref!r} (at {where}) points outside the schema: remote and file "
                    "references are refused, put the definition under $defs and use "
                    "'#/$defs/...'"
                )
            if embedded:
                continue
            target = _resolve(schema, unquote(fragment), anchors)
            if target is None:
                return f"{keyword} {ref!r} (at {where}) does not resolve to anything in the schema"
            targets.setdefault(id(node), []).append(target)
    loop = _same_value_loop(nodes, targets)
    if loop is not None:
        return (
            f"$ref at {where_of.get(id(loop), '#')} refers back to itself without going "
            "into the value (a schema like {'$ref': '#'}): checking any value would never end"
        )
    return None


def _base(uri: str) -> str:
    return uri.partition("#")[0]


def _anchors_of(node: dict[str, Any]) -> list[str]:
    names = [node[k] for k in _ANCHORS if isinstance(node.get(k), str)]
    ident = node.get("$id")  # drafts 6 and 7 spell a plain-name anchor as "$id": "#name"
    if isinstance(ident, str) and ident.startswith("#"):
        names.append(ident[1:])
    return names


def _subschemas(schema: dict[str, Any]) -> Iterator[tuple[dict[str, Any], str]]:
    """Every object in the schema with its JSON pointer, without recursion (deep schemas)."""
    stack: list[tuple[Any, str]] = [(schema, "#")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict):
            yield value, where
            stack.extend((v, f"{where}/{k}") for k, v in value.items() if k not in _DATA)
        elif isinstance(value, list):
            stack.extend((v, f"{where}/{i}") for i, v in enumerate(value))


def _resolve(
    schema: dict[str, Any], fragment: str, anchors: dict[str, dict[str, Any]]
) -> dict[str, Any] | None:
    if fragment and not fragment.startswith("/"):
        return anchors.get(fragment)
    node: Any = schema
    for token in fragment.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node if isinstance(node, dict) else None


def _in_place(
    node: dict[str, Any], targets: dict[int, list[dict[str, Any]]]
) -> Iterator[dict[str, Any]]:
    """The subschemas `node` applies to the very value it is checking."""
    found: list[Any] = list(targets.get(id(node), []))
    found += [node.get(key) for key in _IN_PLACE_ONE]
    for key in _IN_PLACE_MANY:
        if isinstance(node.get(key), list):
            found += node[key]
    if isinstance(node.get("dependentSchemas"), dict):
        found += node["dependentSchemas"].values()
    return iter([f for f in found if isinstance(f, dict)])


def _same_value_loop(
    nodes: list[tuple[dict[str, Any], str]], targets: dict[int, list[dict[str, Any]]]
) -> dict[str, Any] | None:
    """A node on a cycle of subschemas that all apply to one value, or None."""
    done: set[int] = set()
    for start, _ in nodes:
        if id(start) in done:
            continue
        on_path: set[int] = {id(start)}
        stack = [(start, _in_place(start, targets))]
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                stack.pop()
                on_path.discard(id(node))
                done.add(id(node))
            elif id(child) in on_path:
                return node
            elif id(child) not in done:
                on_path.add(id(child))
                stack.append((child, _in_place(child, targets)))
    return None
