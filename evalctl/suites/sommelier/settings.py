"""The sommelier plugin's `evalctl.toml` setting: where the SQLite catalog is built."""

from __future__ import annotations

from pathlib import Path

from evalctl.plugin import PluginSetting

# Default: a file under $EVALCTL_HOME/catalog/ named by the catalog JSON's hash.
CATALOG_DB = PluginSetting(
    "catalog_db", Path | None, None, help="SQLite file of the wine catalog (built if stale)"
)
