"""The Cellar: a small wine-shop assistant with an LLM feature, the golden-query example of
docs/targets.md ("A golden-query example: the Cellar").

`assistant.answer(question)` picks one of its two search tools (`search.search_wines`, with
filters whose Russian and English synonyms it maps to the catalog's values, and
`search.semantic_search`, free text over the tasting notes), runs it over a SQLite catalog
(`catalog.sql`, built into `wines.db`) and writes the reply as `[WINE:N]` sections.
`cellar.toml` tests it through the `python` target (`call = "keywords"`) with spies, and
`cellar_http.toml` through the `http` target against `server.py`, from a JSONL golden file.
"""
