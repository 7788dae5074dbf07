"""The assistant: the application's entry point, `answer(question)`.

A real application would send PROMPT, the question and the two tools' schemas to its LLM
and let it choose the tool and its arguments; this one decides with a few rules instead, so
the example runs anywhere, instantly and the same way every time. What surrounds that
decision is what an application does: call its own tools with the customer's words, and
write the reply from what they returned, one `[WINE:N]` section per wine, its name first.
"""

# Russian words, the customers' own: Cyrillic letters here are words, not look-alikes.
# ruff: noqa: RUF001
from __future__ import annotations

import re
from typing import Any

from cellar import search

PROMPT = """You are the Cellar's sommelier. Call search_wines(color, sweetness, max_price)
with the customer's own words when they name a colour, a sweetness or a budget, else
semantic_search(query). Answer with one [WINE:N] section per wine, its name on the first
line, using only the wines the tool returned."""

# A trace of the tool calls one answer made, for callers that want them (the HTTP wrapper).
Trace = list[dict[str, Any]]

_COLOR = r"(red|white|ros[eé]|pink|sparkling|bubbly|красн\w*|бел\w*|розов\w*|игрист\w*)"
_SWEETNESS = (
    r"(semi[- ]dry|off[- ]dry|semi[- ]sweet|medium[- ]sweet|dry|sweet|dessert"
    r"|полусух\w*|полусладк\w*|сух\w*|сладк\w*)"
)
_PRICE = r"(?:under|below|up to|до|дешевле)\s*(\d+(?:[.,]\d+)?\s*(?:€|eur\w*|евро)?)"


def _word(pattern: str, question: str) -> str | None:
    found = re.search(pattern, question, re.IGNORECASE)
    return found.group(1) if found else None


def _as_form(word: str | None) -> str | None:
    """The customer's word as the tool takes it: Russian adjectives in their neuter form
    ("красного" -> "красное"), which is how a model writes them."""
    if word is None or not re.match(r"[а-яё]", word, re.IGNORECASE):
        return word
    return re.sub(r"(ое|ого|ые|ая|ий|ой)$", "ое", word.lower())


def respond(question: str, trace: Trace | None = None) -> str:
    """The reply to one question; the tool call it makes is appended to `trace`."""
    prompt = f"{PROMPT}\nCustomer: {question}"  # what the LLM would be sent
    del prompt
    color = _as_form(_word(_COLOR, question))
    sweetness = _as_form(_word(_SWEETNESS, question))
    price = _word(_PRICE, question)
    if color or sweetness or price:
        found = search.search_wines(color=color, sweetness=sweetness, max_price=price)
        wines = found["wines"]
        if trace is not None:
            trace.append({"name": "search_wines", "arguments": found["filters"], "result": wines})
    else:
        wines = search.semantic_search(query=question)
        if trace is not None:
            trace.append(
                {"name": "semantic_search", "arguments": {"query": question}, "result": wines}
            )
    if not wines:
        return "Sorry, nothing in the cellar matches that."
    sections = [
        f"[WINE:{n}]\n**{w['name']}**\n{w['color']}, {w['sweetness']}, {w['country']}, "
        f"{w['price']:.2f} EUR"
        for n, w in enumerate(wines[:3], start=1)
    ]
    return "\n\n".join(sections)


def answer(question: str) -> str:
    """evalctl's `python` target with `call = "keywords"` calls this as the application's
    own code would: `answer(question="...")` (docs/targets.md)."""
    return respond(question)
