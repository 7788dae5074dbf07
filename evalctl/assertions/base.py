"""What every assertion shares: its common parameters, the evidence it judges, its outcome.

A new assertion type is a subclass of `Assertion` (its parameters, `extra="forbid"`) with
`default_name` and `evaluate`, listed in its family's `ASSERTIONS` (see
`evalctl.assertions.registry`). `weight` and the check's name are common to every type and
handled around it (`evalctl.assertions.evaluate`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ConfigDict

from evalctl.results.models import ToolCallRecord


@dataclass(frozen=True)
class Outcome:
    """The verdict of one assertion. A failure always says why."""

    passed: bool
    expected: Any = None
    actual: Any = None
    reason: str = ""


_FENCED = re.compile(r"^```(?:json)?\s*\n(.*?)\n?```$", re.DOTALL)


@dataclass
class Evidence:
    """What a case produced: the final answer and every tool call as it really ran."""

    answer: str
    tool_calls: list[ToolCallRecord] = field(default_factory=list)

    @cached_property
    def parsed_json(self) -> tuple[bool, Any, str]:
        """(ok, value, why not): the answer as JSON, or the one ```json block it consists of."""
        text = self.answer.strip()
        if not text:
            return False, None, "the answer is empty"
        fenced = _FENCED.match(text)
        candidate = fenced.group(1) if fenced else text
        try:
            return True, json.loads(candidate), ""
        except json.JSONDecodeError as exc:
            return False, None, f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"

    def calls_to(self, name: str) -> list[ToolCallRecord]:
        return [c for c in self.tool_calls if c.name == name]


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


class Assertion(BaseModel):
    """The parameters of one assertion type (its keys besides `type`, `weight` and the check
    name), plus how to judge the evidence with them."""

    model_config = ConfigDict(extra="forbid")

    def default_name(self) -> str:
        """The check's name when none is given: the type, plus what it is about."""
        raise NotImplementedError

    def evaluate(self, evidence: Evidence) -> Outcome:
        raise NotImplementedError

    def tools_named(self) -> list[tuple[str, str]]:
        """(key, tool name) pairs this assertion refers to, so the loader can check them."""
        return []

    def arguments_named(self) -> list[tuple[str, str, str]]:
        """(key, tool, argument) triples: tool arguments this assertion expects, so the loader
        can check them against the tool's parameters."""
        return []
