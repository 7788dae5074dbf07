"""What a run records of its request, and the request a resume rebuilds from the record.

The `RunRequest` (evalctl.runner.api) is the one description of a run's settings; the files
hold two projections of it, in shapes that stay as they are on disk:
- the manifest's `Selection` (evalctl.runner.resume): what decides which cases run and how,
  as asked (paths made absolute, `timeout_s` as given);
- the results' `RunSettings` (evalctl.results.models): what the run did, as resolved (its
  timeout, its shard with the cases it selected), beside what the suites contributed.

`selection_of` and `run_settings` make the two from a request, `request_of` makes the request
back from them (`run --resume`), and `RECORDED` says, for every field of the request, where
it is kept, so a field added to one is placed in the others on purpose (tests check it).
`shard_shared` derives from it the settings the shards of one run must share (`merge`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from evalctl.chat import Sampling
from evalctl.results.models import (
    RunSettings,
    SampleSettings,
    Shard,
    SuiteGate,
)
from evalctl.runner.api import RunRequest
from evalctl.runner.confirm import ConfirmPlan

# "manifest": kept beside the selection in the run's manifest alone (the confirmation plan,
# which holds the baseline's counts): a resume confirms by it.
Where = Literal["selection", "settings", "both", "manifest", "not recorded"]

# Every RunRequest field: where the record keeps it. "not recorded": how this process runs
# (given again on resume, or not at all), never what the results mean.
RECORDED: Final[dict[str, Where]] = {
    "provider": "selection",
    "model": "selection",
    "script": "selection",
    "paths": "selection",
    "suites": "selection",
    "case_glob": "both",
    "limit": "both",
    "features": "both",
    "meta": "both",
    "out_dir": "not recorded",
    "repeats": "both",
    "sampled": "settings",
    "concurrency": "not recorded",
    "timeout_s": "both",
    "crash_retries": "selection",
    "show_progress": "not recorded",
    "shard": "both",
    "resume": "not recorded",
    "restart_per_case": "settings",
    "cooldown_s": "settings",
    "judge_cache": "not recorded",
    "temperature": "settings",
    "seed": "settings",
    "tools_exec": "not recorded",
    "listeners": "not recorded",
    "prompt_template": "both",
    "seed_base": "settings",
    "confirm": "manifest",
}

# Where the results' settings keep a field recorded there ("settings" or "both") under
# another name: `--feature` and `--meta` are kept as the filters the run selected by.
SETTINGS_NAME: Final[dict[str, str]] = {"features": "feature_filter", "meta": "meta_filter"}

# The results' settings that no request field makes, and whether the shards of one run share
# them: what the suites contributed (one run read one set of suite files), and how this
# shard's drops were confirmed after its cases ran (each shard confirms its own).
FROM_THE_RUN: Final[dict[str, Literal["shared", "per shard"]]] = {
    "suites": "shared",
    "suite_filter": "shared",
    "suite_versions": "shared",
    "sampling": "shared",
    "max_tokens": "shared",
    "gates": "shared",
    "gate_rules": "shared",
    "confirm": "per shard",
}

# Settings (dotted, under RunSettings) that the shards of one run may differ in: each shard
# draws its own first sample seed, its index tells it apart, and a resume may give a shard
# another pause between cases (`request_of`).
PER_SHARD: Final[frozenset[str]] = frozenset({"seed_base", "shard.index", "cooldown_s"})


def settings_field(name: str) -> str:
    """The RunSettings field that keeps the request field `name`."""
    return SETTINGS_NAME.get(name, name)


def shard_shared(recorded: Mapping[str, Where] = RECORDED) -> tuple[str, ...]:
    """The results' settings (dotted, under `settings.`) that every shard of one run must
    hold alike (evalctl.runner.merge): each request field `recorded` keeps in the settings,
    and each one the suites contributed, but those in PER_SHARD. A field added to RECORDED
    as "settings" or "both" is checked by the merge with no other change."""
    names = [settings_field(n) for n, where in recorded.items() if where in ("settings", "both")]
    names += [n for n, kind in FROM_THE_RUN.items() if kind == "shared"]
    # A shard's Shard is compared part by part: its index differs by design.
    parts = [
        f"{name}.{part}" if name == "shard" else name
        for name in names
        for part in (Shard.model_fields if name == "shard" else [""])
    ]
    return tuple(f"settings.{p}" for p in parts if p not in PER_SHARD)


class Selection(BaseModel):
    """The request fields that decide which cases run and how they are scored."""

    model_config = ConfigDict(extra="forbid")

    provider: str
    model: str | None = None
    script: str | None = None
    paths: list[str] | None = None
    suites: list[str] = []
    case_glob: str | None = None
    features: list[str] = []
    meta: dict[str, str] = {}
    limit: int | None = None
    repeats: int = 1
    timeout_s: float | None = None
    crash_retries: int = 1
    shard: tuple[int, int] | None = None
    # A matrix cell's prompt variant (evalctl.runner.prompt_variant): a resumed cell keeps it.
    prompt_template: str | None = None


def absolute(path: Path) -> str:
    # Absolute, so a resume from another working directory still finds the same files.
    return str(path.expanduser().resolve())


def selection_of(request: RunRequest, provider_name: str) -> Selection:
    """The manifest's selection of `request`, run on the provider named `provider_name`."""
    return Selection(
        provider=provider_name,
        model=request.model,
        script=absolute(request.script) if request.script else None,
        paths=[absolute(p) for p in request.paths] if request.paths else None,
        suites=list(request.suites),
        case_glob=request.case_glob,
        features=list(request.features),
        meta=dict(request.meta),
        limit=request.limit,
        repeats=request.repeats,
        timeout_s=request.timeout_s,
        crash_retries=request.crash_retries,
        shard=request.shard,
        prompt_template=request.prompt_template,
    )


def run_settings(
    request: RunRequest,
    *,
    default_timeout_s: float,
    shard_selection: list[str],
    suites: list[str],
    suite_versions: dict[str, str],
    suite_filter: list[str],
    sampling: dict[str, Sampling],
    max_tokens: dict[str, int],
    sampled: dict[str, SampleSettings],
    gates: dict[str, SuiteGate],
    gate_rules: dict[str, str],
) -> RunSettings:
    """The results' settings of `request`, with what its suites contributed (per suite) and
    what the run resolved: the timeout (`default_timeout_s` where the request sets none) and
    the cases its shard selected. `sampled` is empty unless the request's repeats are
    samples. `confirm` is filled in after the cases ran, where the run confirms drops."""
    return RunSettings(
        repeats=request.repeats,
        timeout_s=request.timeout_s or default_timeout_s,
        suites=suites,
        suite_versions=suite_versions,
        temperature=request.temperature,
        seed=request.seed,
        sampling=sampling,
        max_tokens=max_tokens,
        sampled=sampled,
        gates=gates,
        gate_rules=gate_rules,
        # Lets compare/baseline tell "not selected" from "disappeared" (baselines.scope).
        suite_filter=suite_filter,
        case_glob=request.case_glob,
        feature_filter=list(request.features),
        meta_filter=dict(request.meta),
        limit=request.limit,
        shard=(
            Shard(index=request.shard[0], count=request.shard[1], selection=shard_selection)
            if request.shard
            else None
        ),
        restart_per_case=request.restart_per_case,
        cooldown_s=request.cooldown_s if request.restart_per_case else 0.0,
        prompt_template=request.prompt_template,
        seed_base=request.seed_base,
    )


def request_of(
    selection: Selection,
    settings: RunSettings,
    run_dir: Path,
    *,
    restart_per_case: bool = False,
    cooldown_s: float | None = None,
    concurrency: int | None = None,
    show_progress: bool = True,
    judge_cache: bool = True,
    tools_exec: bool = True,
    confirm: ConfirmPlan | None = None,
) -> RunRequest:
    """The request that continues the run recorded as `selection` and `settings` in
    `run_dir`: its selection and sampling as it started, and the procedure it started with
    unless `restart_per_case` names one (with `cooldown_s`; None: 0). `cooldown_s` given
    without it replaces the recorded pause. The rest is how this process runs it."""
    cooldown = cooldown_s
    if not restart_per_case:
        restart_per_case = settings.restart_per_case
        cooldown = settings.cooldown_s if cooldown is None else cooldown
    return RunRequest(
        provider=selection.provider,
        model=selection.model,
        script=Path(selection.script) if selection.script else None,
        paths=[Path(p) for p in selection.paths] if selection.paths else None,
        suites=list(selection.suites),
        case_glob=selection.case_glob,
        features=list(selection.features),
        meta=dict(selection.meta),
        limit=selection.limit,
        out_dir=run_dir,
        repeats=selection.repeats,
        sampled=bool(settings.sampled),
        concurrency=concurrency,
        timeout_s=selection.timeout_s,
        crash_retries=selection.crash_retries,
        show_progress=show_progress,
        shard=selection.shard,
        resume=True,
        restart_per_case=restart_per_case,
        cooldown_s=(cooldown or 0.0) if restart_per_case else 0.0,
        judge_cache=judge_cache,
        temperature=settings.temperature,
        seed=settings.seed,
        tools_exec=tools_exec,
        prompt_template=selection.prompt_template,
        seed_base=settings.seed_base,
        confirm=confirm,
    )
