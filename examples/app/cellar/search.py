"""The Cellar's two search tools, with the post-processing a real one has.

`search_wines` is what the assistant's LLM calls: its arguments are the words the customer
used ("красное", "semi sweet", "20€"). It maps them to the catalog's values (SYNONYMS),
validates the price, runs `run_search` with the mapped filters, and broadens a search that
found nothing (the price limit dropped, then the sweetness). `run_search` is the inner
function that receives the mapped filters: the suite spies on it under the tool's name, so
the golden file's `expected_filters` are the catalog's values, whatever the customer wrote.

`semantic_search` ranks wines by the words a free-text request shares with their tasting
notes (a stand-in for embeddings: the example runs anywhere, the same way every time).
"""

# Russian words, the customers' own: Cyrillic letters here are words, not look-alikes.
# ruff: noqa: RUF001
from __future__ import annotations

import re
from typing import Any

from cellar import db

# Customer words, Russian and English, to the catalog's values.
SYNONYMS: dict[str, dict[str, str]] = {
    "color": {
        "red": "red", "красное": "red", "красного": "red", "красные": "red",
        "white": "white", "белое": "white", "белого": "white", "белые": "white",
        "rose": "rose", "rosé": "rose", "pink": "rose", "розовое": "rose",
        "sparkling": "sparkling", "bubbly": "sparkling", "игристое": "sparkling",
    },
    "sweetness": {
        "dry": "dry", "сухое": "dry", "сухого": "dry",
        "semi-dry": "semi-dry", "off-dry": "semi-dry", "полусухое": "semi-dry",
        "semi-sweet": "semi-sweet", "medium-sweet": "semi-sweet", "полусладкое": "semi-sweet",
        "sweet": "sweet", "dessert": "sweet", "сладкое": "sweet", "сладкого": "sweet",
    },
}  # fmt: skip

COLUMNS = "id, name, color, sweetness, country, grape, price"


def normalize(
    color: str | None = None, sweetness: str | None = None, max_price: Any = None
) -> dict[str, Any]:
    """The filters as catalog values: synonyms mapped (an unknown word dropped), the price a
    positive number ("20€", "20 евро" and 20 alike; anything else dropped)."""
    filters: dict[str, Any] = {}
    for key, word in (("color", color), ("sweetness", sweetness)):
        if word:
            value = SYNONYMS[key].get(word.strip().lower().replace(" ", "-"))
            if value is not None:
                filters[key] = value
    if max_price is not None:
        found = re.search(r"\d+(?:[.,]\d+)?", str(max_price))
        price = float(found.group().replace(",", ".")) if found else 0.0
        if price > 0:
            filters["max_price"] = price
    return filters


def run_search(
    color: str | None = None, sweetness: str | None = None, max_price: float | None = None
) -> list[dict[str, Any]]:
    """The wines matching every filter given, cheapest first."""
    where, params = [], []
    for column, value in (("color", color), ("sweetness", sweetness)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(value)
    if max_price is not None:
        where.append("price <= ?")
        params.append(max_price)
    sql = f"SELECT {COLUMNS} FROM wines"
    if where:
        sql += " WHERE " + " AND ".join(where)
    with db.connect() as conn:
        return [dict(row) for row in conn.execute(sql + " ORDER BY price", params)]


def search_wines(
    color: str | None = None, sweetness: str | None = None, max_price: Any = None
) -> dict[str, Any]:
    """The model-facing tool: filters in the customer's words, mapped, searched, broadened
    when nothing matches. `filters`: what was asked, as catalog values."""
    filters = normalize(color=color, sweetness=sweetness, max_price=max_price)
    asked = dict(filters)
    wines = run_search(**filters)
    broadened: list[str] = []
    for dropped in ("max_price", "sweetness"):
        if wines or dropped not in filters:
            continue
        del filters[dropped]
        broadened.append(dropped)
        wines = run_search(**filters)
    return {"wines": wines, "filters": asked, "broadened": broadened}


def semantic_search(query: str, limit: int = 3) -> list[dict[str, Any]]:
    """The wines whose tasting notes share the most words with `query`, best first."""
    words = {w for w in re.findall(r"\w+", query.lower()) if len(w) > 3}
    with db.connect() as conn:
        rows = [dict(r) for r in conn.execute(f"SELECT {COLUMNS}, notes FROM wines")]
    scored = [(len(words & set(re.findall(r"\w+", row.pop("notes").lower()))), row) for row in rows]
    ranked = [row for score, row in sorted(scored, key=lambda s: -s[0]) if score > 0]
    return ranked[:limit]
