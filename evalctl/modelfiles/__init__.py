"""Model manifest: known GGUF files, where they come from, and how to verify them."""
