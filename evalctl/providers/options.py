"""What a provider is made with: `ProviderOptions` (settings, environment, the model and reply
script asked for, the run's case values); `evalctl.providers.base.ProviderFactory` takes them.

On its own, below the Provider base class (whose trait hooks read them) and the registry, so
that a provider module reads its options without importing the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalctl.config import Settings

# Fills placeholders in a value from a case's values: (value, values) -> (the filled value,
# the problems found, each in words).
ValueRenderer = Callable[[Any, Mapping[str, Any]], tuple[Any, list[str]]]


@dataclass(frozen=True)
class CaseValues:
    """What the run's cases give a stand-in provider's templates (a reply script's replies):
    each case's values by case key (`suite/id`), and the renderer that fills them in. The
    runner hands them in: the cases' template renderer sits in a layer above this one."""

    by_key: Mapping[str, Mapping[str, Any]]
    render: ValueRenderer

    def values_for(self, tag: str) -> Mapping[str, Any] | None:
        """The values of the case a request tagged `tag` belongs to (a side request's tag,
        `suite/id#judge`, belongs to its case); None for a tag of no case."""
        return self.by_key.get(tag.partition("#")[0])


@dataclass(frozen=True)
class ProviderOptions:
    settings: Settings
    env: Mapping[str, str]
    model: str | None = None
    script: Path | None = None
    # Provider-specific knobs that have no CLI flag of their own yet.
    extra: Mapping[str, str] = field(default_factory=dict)
    # The run's cases' values, for a reply script templated over the row; None: no run.
    case_values: CaseValues | None = None
    # Cases the run sends at once (-j; None: not given): a provider that serves requests
    # itself (the local daemon) sizes its parallelism to it.
    concurrency: int | None = None
