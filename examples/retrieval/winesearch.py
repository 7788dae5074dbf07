"""A small semantic search over a wine list, as a `python` tool: the query's words, widened by
a few related terms, matched against each wine's tasting notes. It returns scored rows, best
first, as a real embedding search would: `{"wines": [{"id", "name", "similarity"}, ...]}`.

The retrieval suite beside it (wine-search.toml) tests it directly, with no model.
"""

from __future__ import annotations

import math

WINES = {
    "pinot-noir": ("Pinot Noir, Burgundy", "red cherry raspberry berry silky earthy"),
    "grenache": ("Grenache, Priorat", "red strawberry berry spice warm"),
    "zinfandel": ("Zinfandel, Lodi", "red blackberry jam berry pepper bold"),
    "chablis": ("Chablis, Burgundy", "white mineral flint chalk citrus crisp"),
    "muscadet": ("Muscadet, Loire", "white saline mineral lemon crisp"),
    "riesling": ("Riesling, Mosel", "white slate mineral peach off-dry"),
    "chardonnay": ("Chardonnay, Napa", "white oak butter vanilla rich"),
    "barolo": ("Barolo, Piedmont", "red tar rose tannic earthy"),
}

# Words a query means beyond itself: the "semantic" part of this search.
RELATED = {
    "berry": ("cherry", "raspberry", "strawberry", "blackberry"),
    "fruity": ("cherry", "raspberry", "strawberry", "peach", "citrus"),
    "mineral": ("flint", "chalk", "saline", "slate"),
}


def _terms(text: str) -> set[str]:
    words = set(text.lower().split())
    for word in list(words):
        words.update(RELATED.get(word, ()))
    return words


def semantic_search(query: str, limit: int = 3) -> dict[str, list[dict[str, object]]]:
    """The `limit` wines whose notes are nearest the query (cosine of the term sets), best
    first; wines sharing nothing with the query are left out."""
    wanted = _terms(query)
    scored = []
    for wine_id, (name, notes) in WINES.items():
        terms = set(notes.split())
        shared = len(wanted & terms)
        if shared:
            scored.append((round(shared / math.sqrt(len(wanted) * len(terms)), 3), wine_id, name))
    scored.sort(key=lambda item: (-item[0], item[1]))
    rows = [{"id": i, "name": n, "similarity": s} for s, i, n in scored[:limit]]
    return {"wines": rows}
