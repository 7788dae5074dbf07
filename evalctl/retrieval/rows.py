"""Reading a retrieval tool's result as scored rows.

A tool returns scored rows as a JSON list of objects, or as an object with exactly one field
that is a list (`{"results": [...]}`, `{"wines": [...]}`), its items objects. The rows keep
the tool's order: "the top k" are the first k rows as returned. Each row names its id in
`id_field` (default `id`) and its score in `score_field` (default `score`).
"""

from __future__ import annotations

import json
import math
from typing import Any

from evalctl.results.models import ToolCallRecord

Row = dict[str, Any]


class RowsError(Exception):
    """The tool's result is not scored rows, or a row lacks the field a check reads."""


def returned_value(call: ToolCallRecord) -> Any:
    """What the tool returned: the value the spy kept, else its text parsed as JSON."""
    if "value" in call.data:
        return call.data["value"]
    try:
        return json.loads(call.result)
    except json.JSONDecodeError:
        raise RowsError(f"the tool returned text that is not JSON: {call.result[:200]!r}") from None


def rows_of(call: ToolCallRecord) -> list[Row]:
    """The rows of one recorded call, in the tool's order."""
    if call.is_error:
        raise RowsError(f"the call of {call.name!r} failed: {call.result}")
    value = returned_value(call)
    if isinstance(value, dict):
        lists = [key for key, item in value.items() if isinstance(item, list)]
        if len(lists) != 1:
            found = ", ".join(lists) or "none"
            raise RowsError(
                "the tool returned an object that is not scored rows: it needs exactly one "
                f"field holding a list of rows (list fields: {found})"
            )
        value = value[lists[0]]
    if not isinstance(value, list):
        raise RowsError(
            f"the tool returned {type(value).__name__}, not scored rows (a list of objects)"
        )
    for index, row in enumerate(value, start=1):
        if not isinstance(row, dict):
            raise RowsError(f"row {index} is {type(row).__name__}, not an object")
    return value


def row_id(row: Row, index: int, id_field: str) -> Any:
    """The row's id (`index` counts from 1, for the message when it has none)."""
    if id_field not in row:
        raise RowsError(f"row {index} has no {id_field!r} field (id_field): {_shown(row)}")
    return row[id_field]


def row_score(row: Row, index: int, score_field: str) -> float:
    """The row's score as a number."""
    if score_field not in row:
        raise RowsError(f"row {index} has no {score_field!r} field (score_field): {_shown(row)}")
    score = row[score_field]
    # JSON's true is not a score, and NaN compares false with everything.
    if isinstance(score, bool) or not isinstance(score, int | float) or math.isnan(score):
        raise RowsError(f"row {index}'s {score_field!r} is {score!r}, not a number")
    return float(score)


def top_ids(rows: list[Row], k: int, id_field: str) -> list[Any]:
    """The ids of the first `k` rows."""
    return [row_id(row, i, id_field) for i, row in enumerate(rows[:k], start=1)]


def _shown(row: Row) -> str:
    text = json.dumps(row, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 200 else text[:200] + "..."
