"""Declarative assertions for `kind = "assert"` suites: one module per family (text, JSON,
tool use, grounding), each assertion a pydantic model that turns into one named check."""
