"""What a suite may `require`, and how to tell whether this run can provide it.

A need that is not met turns the suite's cases into `skipped` with the reason: never
failures, never silently absent from the results.
"""

from __future__ import annotations

from collections.abc import Callable

from evalctl.cases.schema import SuiteTable
from evalctl.config import Settings
from evalctl.providers.base import CAP_JSON_SCHEMA, CAP_TOOLS, Provider

# A resource check returns None when the resource is there, else why it is not.
ResourceCheck = Callable[[Settings, SuiteTable], str | None]

CAPABILITIES = frozenset({CAP_TOOLS, CAP_JSON_SCHEMA})


def _catalog(settings: Settings, suite: SuiteTable) -> str | None:
    # Imported here: SQLite and the catalog data load only when a suite needs them.
    from evalctl.suites.sommelier.tools import check_catalog

    return check_catalog(settings, suite)


# Resource name -> check. Suites that need data (a catalog database, ...) register here.
RESOURCES: dict[str, ResourceCheck] = {"catalog": _catalog}


def known_requirements() -> frozenset[str]:
    return CAPABILITIES | frozenset(RESOURCES)


def unmet_requirement(suite: SuiteTable, provider: Provider, settings: Settings) -> str | None:
    for need in suite.requires:
        if need in CAPABILITIES:
            if need not in provider.capabilities:
                return f"provider {provider.name!r} lacks the {need!r} capability"
            continue
        check = RESOURCES.get(need)
        if check is None:
            return f"unknown requirement {need!r}"
        problem = check(settings, suite)
        if problem is not None:
            return f"requirement {need!r} not met: {problem}"
    return None
