"""Versioned run results and their renderings (JSON canonical; TOML, JUnit, Markdown)."""
