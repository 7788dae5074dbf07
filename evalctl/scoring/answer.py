"""One reading of a case's final answer, shared by every check that looks at it.

The JSON in an answer is read by one rule, first match wins:

1. `whole`: the whole answer (surrounding whitespace aside) is JSON;
2. `fenced`: the answer holds exactly one fenced code block (```` ```json ```` or a bare
   ```` ``` ````) and its body is JSON;
3. `embedded`: the span from the first `{` to the last `}` (or `[` to `]`, whichever opens
   first) is JSON: prose around one object or array.

`json_from` records which rule read it, and `json_error` why nothing could be read (the
error of the first rule that had a candidate). A suite kind, `json-field`, `json-schema`
and a suite's `output_schema` all see the same value; `json-valid` can ask that the value was
read without prose around it (`json_from` other than `embedded`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from evalctl.userfiles import MAX_NESTING

JsonFrom = Literal["whole", "fenced", "embedded"]

_FENCE = re.compile(r"```(?:json)?[ \t]*\n?(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Answer:
    """The final answer's text and the JSON read from it (`json_from` None: no JSON)."""

    text: str
    json: Any = None
    json_from: JsonFrom | None = None
    json_error: str = ""

    @property
    def has_json(self) -> bool:
        return self.json_from is not None


def _candidates(text: str) -> list[tuple[JsonFrom, str]]:
    stripped = text.strip()
    found: list[tuple[JsonFrom, str]] = [("whole", stripped)]
    fences = _FENCE.findall(text)
    if len(fences) == 1:
        found.append(("fenced", fences[0].strip()))
    spans = [(text.find(o), text.rfind(c)) for o, c in (("{", "}"), ("[", "]"))]
    opened = [(start, end) for start, end in spans if 0 <= start < end]
    if opened:
        start, end = min(opened)
        found.append(("embedded", text[start : end + 1]))
    return found


def read_answer(text: str) -> Answer:
    """The answer with its JSON read by the rule in this module's docstring."""
    if not text.strip():
        return Answer(text, json_error="the answer is empty")
    error = ""
    for source, candidate in _candidates(text):
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError as exc:
            error = error or f"not JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            continue
        except RecursionError:
            # JSON nested past the parser's limit (an application can answer anything): no
            # check can read it, and it must not end the run.
            error = error or "not JSON that can be read: nested too deeply"
            continue
        except ValueError as exc:  # an integer of more digits than Python reads
            error = error or f"not JSON that can be read: {exc}"
            continue
        if _deeper_than(value, MAX_NESTING):
            error = error or f"not JSON that can be read: nested more than {MAX_NESTING} levels"
            continue
        return Answer(text, value, source)
    return Answer(text, json_error=error)


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` nests more than `limit` levels (iteratively: it must not recurse)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth >= limit:
                return True
            stack.extend(
                (child, depth + 1) for child in (item.values() if isinstance(item, dict) else item)
            )
    return False
