"""Case suites: the TOML schema and a strict loader whose errors name file, case and field."""
