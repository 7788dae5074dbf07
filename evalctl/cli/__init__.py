"""The command line: one module per command; each builds an output model and renders it."""
