"""What the built-in assertion types share: their parameters' base model, the result they
build, and reading what a tool returned.

An assertion type is a `Check` (evalctl.scoring.check): a class naming its `type_name` and
`params_model`, with `evaluate(params, ctx)`, listed in its family module's `CHECKS`
(registered by `evalctl.assertions.register`). `weight` and the check's name are common to
every type and handled around it (evalctl.scoring.declared, evalctl.scoring.score).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict

from evalctl.results.models import CheckResult, ToolCallRecord, pass_or_fail


class Params(BaseModel):
    """The parameters of one assertion type: its keys besides `type`, `weight` and the check
    name. A mistyped key is an error."""

    model_config = ConfigDict(extra="forbid")


class TextParams(Params):
    """Parameters whose text may come from a row: a number there is its text, so a typed
    `value = "{{ n }}"` (evalctl.cases.template) reads as it did when it was text."""

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)


def outcome(
    type_name: str, passed: bool, expected: Any, actual: Any, reason: str = ""
) -> CheckResult:
    """An assertion's result; the case's name for the check replaces `type_name`. A failure
    always says why."""
    return CheckResult(
        name=type_name,
        status=pass_or_fail(passed),
        expected=expected,
        actual=actual,
        message="" if passed else reason,
    )


def returned_value(call: ToolCallRecord) -> Any:
    """What a tool returned: the structured value the spy kept, else its text parsed as JSON,
    else the text itself."""
    if "value" in call.data:
        return call.data["value"]
    try:
        return json.loads(call.result)
    except json.JSONDecodeError:
        return call.result


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON means it: `true` is not `1`, while `1` equals `1.0`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def value_at(data: Any, path: str) -> tuple[bool, Any]:
    """The value at a dotted path (`order.items.0.sku`); numeric parts index lists."""
    current = data
    for part in path.split(".") if path else []:
        if isinstance(current, dict) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.lstrip("-").isdigit():
            index = int(part)
            if not -len(current) <= index < len(current):
                return False, None
            current = current[index]
        else:
            return False, None
    return True, current
