"""The assistant: the application's entry point, `answer(request)`.

A real application would send PROMPT and the question to its LLM and let it pick the tools;
this one decides with a few rules instead, so the example runs anywhere, instantly and the
same way every time. Everything around that decision is what an application does: assemble
its own prompt, call its own tools, write the reply from what they returned.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from bookshop import tools

PROMPT = """You are the Bookshop assistant. Answer in one or two sentences, using only what
the tools return: search_books(topic) for recommendations, Prices.price_of(title) for prices.
Customer: {question}"""

# A trace of the tool calls one answer made, for callers that want them (the HTTP wrapper).
Trace = list[dict[str, Any]]


def _call(trace: Trace | None, name: str, fn: Callable[..., Any], **arguments: Any) -> Any:
    try:
        result = fn(**arguments)
    except Exception as exc:
        if trace is not None:
            trace.append(
                {"name": name, "arguments": arguments, "result": str(exc), "is_error": True}
            )
        raise
    if trace is not None:
        trace.append({"name": name, "arguments": arguments, "result": result})
    return result


def respond(question: str, trace: Trace | None = None) -> str:
    """The reply to one question; each tool call it makes is appended to `trace`."""
    prompt = PROMPT.format(question=question)  # what the LLM would be sent
    del prompt
    quoted = re.search(r"['\"\u201c]([^'\"\u201d]+)['\"\u201d]", question)
    if quoted and re.search(r"\b(price|cost|how much)\b", question, re.IGNORECASE):
        title = quoted.group(1)
        try:
            found = _call(trace, "price_of", tools.Prices().price_of, title=title)
        except LookupError:
            return f"Sorry, we do not carry {title!r}."
        return f"{found['title']} costs {found['price']:.2f} {found['currency']}."
    topic = re.search(r"\babout (\w+)", question, re.IGNORECASE)
    if topic:
        books = _call(trace, "search_books", tools.search_books, topic=topic.group(1))
        if not books:
            return f"Sorry, we have no books about {topic.group(1)}."
        listed = "; ".join(f"{b['title']} by {b['author']}" for b in books)
        return f"You might like: {listed}."
    return "I can recommend books on a topic or tell you what a book costs."


def answer(request: dict[str, Any]) -> str:
    """evalctl's `python` target calls this with its input document (docs/targets.md)."""
    return respond(request["prompt"])
