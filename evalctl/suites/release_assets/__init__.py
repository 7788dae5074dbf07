"""The `release-assets` suite: the `install-recipe` kind and the release-asset tools
(`fetch_file`, `inspect_archive`, `extract_pattern`) over committed release fixtures.

A plugin: `register` adds them to the registry; the modules import on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalctl.plugin import Registry, SuiteKind, Tool


def _kind() -> SuiteKind:
    from evalctl.suites.release_assets.kind import KIND

    return KIND


def _fetch_file() -> Tool:
    from evalctl.suites.release_assets.tools import FETCH_FILE

    return FETCH_FILE


def _inspect_archive() -> Tool:
    from evalctl.suites.release_assets.tools import INSPECT_ARCHIVE

    return INSPECT_ARCHIVE


def _extract_pattern() -> Tool:
    from evalctl.suites.release_assets.tools import EXTRACT_PATTERN

    return EXTRACT_PATTERN


def register(registry: Registry) -> None:
    registry.add_kind("install-recipe", _kind)
    registry.add_tool("fetch_file", _fetch_file)
    registry.add_tool("inspect_archive", _inspect_archive)
    registry.add_tool("extract_pattern", _extract_pattern)
