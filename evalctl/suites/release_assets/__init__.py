"""The `release-assets` suite: the `install-recipe` kind and the release-asset tools
(`fetch_file`, `inspect_archive`, `extract_pattern`) over committed release fixtures."""
