"""Per-provider baselines: the model, reading/writing with sanity checks, and comparison."""
