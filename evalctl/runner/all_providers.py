"""`evalctl run --provider all`: the same selection on every real provider, one run each.

A provider whose prerequisite is missing (no API key, no model) is reported as skipped with
the reason — never as a failure — and the others still run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from evalctl.config import Settings
from evalctl.errors import BadInputError
from evalctl.providers.registry import SPECS, ProviderOptions, availability
from evalctl.runner.api import RunOutcome, RunRequest
from evalctl.runner.execute import execute_run, new_run_id

ALL = "all"


@dataclass
class ProviderRun:
    name: str
    outcome: RunOutcome | None = None
    skip_reason: str | None = None


def execute_all(
    request: RunRequest, settings: Settings, env: Mapping[str, str]
) -> list[ProviderRun]:
    if request.model is not None:
        raise BadInputError(
            "a model name belongs to one provider; drop it with --provider all", field="--model"
        )
    options = ProviderOptions(settings=settings, env=env, script=request.script)
    # The scripted provider is a test tool (not `real`): it joins only when a script was given.
    # The targets (python, http, command) are applications set up per suite: never.
    wanted = {s.name for s in SPECS.values() if s.real or (s.name == "scripted" and request.script)}
    base = request.out_dir or settings.results_dir / new_run_id(ALL)
    runs: list[ProviderRun] = []
    for row in availability(options):
        if row.name not in wanted:
            continue
        if not row.available:
            runs.append(ProviderRun(row.name, skip_reason=row.reason))
            continue
        one = replace(request, provider=row.name, out_dir=base / row.name)
        runs.append(ProviderRun(row.name, outcome=execute_run(one, settings, env)))
    return runs
