"""`evalctl run --provider all`: the same selection on every real provider, one run each.

A matrix of one cell per provider (evalctl.runner.matrix). A provider whose prerequisite is
missing (no API key, no model) is reported as skipped with the reason — never as a failure —
and the others still run.
"""

from __future__ import annotations

from collections.abc import Mapping

from evalctl.config import Settings
from evalctl.errors import BadInputError
from evalctl.providers.options import ProviderOptions
from evalctl.providers.registry import SPECS, availability
from evalctl.runner.api import RunRequest
from evalctl.runner.matrix import Cell, CellRun, MatrixRun, execute_matrix

ALL = "all"


def execute_all(request: RunRequest, settings: Settings, env: Mapping[str, str]) -> MatrixRun:
    if request.model is not None:
        raise BadInputError(
            "a model name belongs to one provider; drop it with --provider all", field="--model"
        )
    options = ProviderOptions(settings=settings, env=env, script=request.script)
    # A replayer (the scripted provider) is a test tool (not `real`): it joins only when a
    # script was given. The targets (python, http, command) are applications set up per
    # suite: never.
    wanted = {
        s.name
        for s in SPECS.values()
        if s.traits.real or (s.traits.replays_script and request.script is not None)
    }
    cells: list[Cell] = []
    skipped: list[CellRun] = []
    for row in availability(options):
        if row.name not in wanted:
            continue
        if row.available:
            cells.append(Cell(row.name))
        else:
            skipped.append(CellRun(Cell(row.name), skip_reason=row.reason))
    return execute_matrix(request, cells, settings, env, skipped=skipped, label=ALL)
