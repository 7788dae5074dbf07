"""The `sommelier` suite: the `catalog-qa` kind, the catalog tools (`search_wines`,
`semantic_search` on embeddings, `lexical_search` on FTS5), the `catalog` resource over a
real SQLite wine catalog, and the `catalog_db` setting of `evalctl.toml`.

A plugin: `register` adds them to the registry; SQLite and the catalog load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalctl.plugin import Registry, Settings, Suite, SuiteKind, Tool


def _kind() -> SuiteKind:
    from evalctl.suites.sommelier.kind import KIND

    return KIND


def _search_wines() -> Tool:
    from evalctl.suites.sommelier.tools import SEARCH_WINES

    return SEARCH_WINES


def _semantic_search() -> Tool:
    from evalctl.suites.sommelier.tools import SEMANTIC_SEARCH

    return SEMANTIC_SEARCH


def _lexical_search() -> Tool:
    from evalctl.suites.sommelier.tools import LEXICAL_SEARCH

    return LEXICAL_SEARCH


def _check_catalog(settings: Settings, suite: Suite) -> str | None:
    from evalctl.suites.sommelier.tools import check_catalog

    return check_catalog(settings, suite)


def _open_catalog(settings: Settings, suite: Suite) -> Any:
    from evalctl.suites.sommelier.tools import open_suite_catalog

    return open_suite_catalog(settings, suite)


def register(registry: Registry) -> None:
    registry.add_kind("catalog-qa", _kind)
    registry.add_tool("search_wines", _search_wines)
    registry.add_tool("semantic_search", _semantic_search)
    registry.add_tool("lexical_search", _lexical_search)
    registry.add_resource("catalog", _check_catalog, _open_catalog)
    from evalctl.suites.sommelier.settings import CATALOG_DB

    registry.add_setting(CATALOG_DB)
