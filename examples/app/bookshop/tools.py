"""The assistant's two tools, both over the SQLite catalogue: the functions evalctl spies on."""

from __future__ import annotations

from typing import Any

from bookshop.db import connect


def search_books(topic: str, limit: int = 3) -> list[dict[str, Any]]:
    """Books on a topic (or with the word in their title), cheapest first."""
    with connect() as conn:
        rows = conn.execute(
            "SELECT title, author, price_eur FROM books WHERE topic = ? OR title LIKE ? "
            "ORDER BY price_eur LIMIT ?",
            (topic.lower(), f"%{topic}%", limit),
        ).fetchall()
    return [dict(row) for row in rows]


class Prices:
    """Price look-ups; a title the shop does not carry raises LookupError."""

    currency = "EUR"

    def price_of(self, title: str) -> dict[str, Any]:
        with connect() as conn:
            row = conn.execute(
                "SELECT title, price_eur FROM books WHERE lower(title) = lower(?)", (title,)
            ).fetchone()
        if row is None:
            raise LookupError(f"no book titled {title!r}")
        return {"title": row["title"], "price": row["price_eur"], "currency": self.currency}
