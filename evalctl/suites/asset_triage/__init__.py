"""The `asset-triage` suite: the `asset-triage` kind (one JSON answer, no tools)."""
