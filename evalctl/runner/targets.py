"""Which provider runs each suite when suites declare a target (`[[suite.target]]`).

- No `--provider`: a suite with targets runs against its first; if every suite in the run
  has one, the run's provider (its header, its concurrency) is the first suite's target.
- `--provider python|http|command`: every suite must declare a target of that type.
- Any other `--provider`: the model itself answers the suite's prompts; targets are unused.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalctl.cases.requirements import unmet_conditions
from evalctl.cases.schema import Suite
from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.errors import BadInputError, ProviderError
from evalctl.providers.base import Provider
from evalctl.providers.targets.build import build_target
from evalctl.providers.targets.config import TARGET_TYPES, describe


class UnbuiltTarget(Provider):
    """A target left unbuilt because its suite's `requires` are not met: it stands in the
    run (its header names the target) while every case of the suite is skipped, and is never
    asked to answer."""

    model_sha256: str | None = None
    capabilities: frozenset[str] = frozenset()

    def __init__(self, name: str, model: str):
        self.name = name
        self._model = model

    @property
    def model(self) -> str:
        return self._model

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        raise ProviderError(f"the {self.name} target was not set up: its requires are not met")

    def close(self) -> None:
        pass


class SuiteTargets:
    """The target providers of one run's suites, by suite name."""

    def __init__(
        self,
        providers: dict[str, Provider],
        run_provider: Provider | None,
        deterministic: frozenset[str] = frozenset(),
    ):
        self._providers = providers
        self._deterministic = deterministic
        # The run's own provider where the targets stand for it; None: create one as usual.
        self.run_provider = run_provider

    @classmethod
    def open(
        cls, suites: list[Suite], requested: str | None, env: Mapping[str, str]
    ) -> SuiteTargets:
        if requested is not None and requested not in TARGET_TYPES:
            return cls({}, None)
        providers: dict[str, Provider] = {}
        deterministic: set[str] = set()
        try:
            for suite in suites:
                targets = suite.table.target
                index, chosen = next(
                    ((i, t) for i, t in enumerate(targets, 1) if requested in (None, t.type)),
                    (0, None),
                )
                if chosen is None and requested is not None:
                    declared = ", ".join(t.type for t in targets) or "none"
                    raise BadInputError(
                        f"suite {suite.name!r} declares no {requested} target "
                        f"(declared: {declared})",
                        file=str(suite.path),
                        field="suite.target",
                        hint="docs/targets.md shows each target's table",
                    )
                if chosen is not None:
                    if chosen.deterministic:
                        deterministic.add(suite.name)
                    try:
                        providers[suite.name] = build_target(
                            chosen,
                            suite.directory,
                            env,
                            source=str(suite.path),
                            field=f"suite.target[{index}]",
                        )
                    except BadInputError:
                        # A target that cannot be set up where the suite's own `requires`
                        # are not met (its URL's variable unset, say) is skipped, not bad
                        # input: the cases say why.
                        reason = unmet_conditions(suite.table.requires, env)
                        if reason is None:
                            raise
                        providers[suite.name] = UnbuiltTarget(chosen.type, describe(chosen))
        except BaseException:
            for provider in providers.values():
                provider.close()
            raise
        everyone = bool(suites) and all(s.name in providers for s in suites)
        return cls(
            providers, providers[suites[0].name] if everyone else None, frozenset(deterministic)
        )

    def deterministic(self, suite: str) -> bool:
        """Whether the suite runs against a target declared `deterministic = true`."""
        return suite in self._deterministic

    def provider_for(self, suite: str, default: Provider) -> Provider:
        return self._providers.get(suite, default)

    def close(self) -> None:
        for provider in self._providers.values():
            provider.close()
