"""The `sommelier` suite: the `catalog-qa` kind, the catalog tools (`search_wines`,
`semantic_search`) and the `catalog` resource over a real SQLite wine catalog."""
