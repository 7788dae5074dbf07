"""The built-in suites, one package each: its kind, tools and the resources it needs."""
