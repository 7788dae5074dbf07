"""The `asset-triage` suite: the `asset-triage` kind (one JSON answer, no tools).

A plugin: `register` adds the kind to the registry; its module imports on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalctl.plugin import Registry, SuiteKind


def _kind() -> SuiteKind:
    from evalctl.suites.asset_triage.kind import KIND

    return KIND


def register(registry: Registry) -> None:
    registry.add_kind("asset-triage", _kind)
