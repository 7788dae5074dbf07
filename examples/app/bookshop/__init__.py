"""Bookshop: a small application with an LLM feature, the worked example of docs/targets.md.

Its assistant (`assistant.answer`) takes a customer's question, assembles its own prompt,
decides which of its two tools to call (`tools.search_books`, `tools.Prices.price_of`, both
over a SQLite file) and writes the reply. evalctl tests it as it is: through the `python`
target with spies on the two tools, and through the `http` target against `server.py`.
"""
