"""What a suite may `require`, and how to tell whether this run can provide it.

Capabilities are the provider's; resources are registered by plugins (`evalctl.plugin`,
`add_resource`). A need that is not met turns the suite's cases into `skipped` with the
reason: never failures, never silently absent from the results.
"""

from __future__ import annotations

from typing import Any

from evalctl.cases.schema import Suite
from evalctl.config import Settings
from evalctl.errors import EvalctlError
from evalctl.providers.base import CAPABILITIES, Provider


def known_requirements() -> frozenset[str]:
    from evalctl.plugin_loader import registry

    return CAPABILITIES | frozenset(registry().names("resource"))


def unmet_requirement(
    suite: Suite, provider: Provider, settings: Settings, opened: dict[str, Any] | None = None
) -> str | None:
    """None when every need is met, else why not. Resources with an opener are opened into
    `opened` (the suite's `ctx.resources`) once their check passes."""
    from evalctl.plugin_loader import registry

    for need in suite.table.requires:
        if need in CAPABILITIES:
            if need not in provider.capabilities:
                return f"provider {provider.name!r} lacks the {need!r} capability"
            continue
        resource = registry().resource(need)
        if resource is None:
            return f"unknown requirement {need!r}"
        check, open_ = resource
        problem = check(settings, suite)
        if problem is None and open_ is not None and opened is not None:
            try:
                opened[need] = open_(settings, suite)
            except EvalctlError as exc:
                problem = exc.message
        if problem is not None:
            return f"requirement {need!r} not met: {problem}"
    return None
