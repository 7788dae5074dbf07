"""Model-graded checks: a judge model grades an answer against a rubric.

`prompt` builds the judge's request and reads its verdict, `cache` keeps verdicts under
EVALCTL_HOME so a re-run costs nothing, `service` is the run-scoped judge (which provider and
model, retries, cost), and `check` is the `judge` assertion type of `assert` suites.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalctl.plugin import Check, Registry


def _check() -> Check:
    # Imported on first use: the check pulls in the provider registry.
    from evalctl.judge.check import CHECK

    return CHECK


def register(registry: Registry) -> None:
    """A built-in plugin: the `judge` assertion type."""
    registry.add_check("judge", _check)
