"""Resuming a run that was interrupted or killed: `evalctl run --resume RUN_DIR`.

A run directory holds two things that make this possible:
- `manifest.json`, written atomically when the run starts: what was selected (provider,
  model, suites, cases, repeats, shard, ...) and the run's header (run_id, start time,
  settings, environment). SIGKILL never gives evalctl a chance to write anything at the end,
  so everything the final file needs apart from the cases is written at the start.
- `journal.jsonl`, one finished case per line, written as each case finishes and fsync'd
  in groups (evalctl.runner.journal): a kill loses at most the cases in flight, a crash of
  the machine at most the last group as well.

Resuming runs only the cases missing from the journal, with the original selection and
run_id, and writes the results file a clean run would have written. It refuses (exit 2) when
anything that decides the results differs: a flag naming another selection, a provider
reporting another model, or suite files that changed since.

A run started with `--baseline B --confirm R` keeps its gate: the manifest holds the
confirmation plan (the baseline's counts in it, the rule and alpha), so `--resume DIR` alone
confirms as the run would have, `--baseline`/`--confirm` given again must name the same, and
each confirmation seed handed out is recorded before its sample is drawn, so the cases a
resumed run still has to confirm are sampled with seeds no earlier process used.

The manifest is a versioned file (results.versions, kind `manifest`): version 1 (before the
plan was recorded) is upgraded on read; a version this evalctl does not know is refused.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from evalctl import userfiles
from evalctl.cases.schema import Suite
from evalctl.errors import BadInputError
from evalctl.providers.base import Provider
from evalctl.results.document import Document, check_schema_version
from evalctl.results.io import RESULTS_JSON, RESULTS_TOML, write_json_atomic
from evalctl.results.models import CaseResult, RunResult
from evalctl.results.versions import MANIFEST_VERSION, supported, upgrade
from evalctl.runner.api import RunRequest
from evalctl.runner.confirm import ConfirmPlan
from evalctl.runner.journal import Journal
from evalctl.runner.recorded import Selection, absolute, request_of, selection_of

MANIFEST = "manifest.json"
JOURNAL = "journal.jsonl"


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[2] = MANIFEST_VERSION
    kind: Literal["run_manifest"] = "run_manifest"
    selection: Selection
    # The run's header: everything of the final RunResult but the cases and the summary.
    header: RunResult
    # `run --baseline B --confirm R`: the plan it confirms by, B's counts in it, so a resume
    # confirms by the plan the run started with whatever B holds by then. None: no --baseline.
    confirm: ConfirmPlan | None = None
    # False only in a manifest upgraded from version 1, which did not record the plan: its
    # resume takes --baseline and --confirm as given, as that evalctl did.
    confirm_recorded: bool = True
    # Per suite, the highest confirmation seed handed out so far (written before its sample
    # is drawn): a resumed confirmation draws above it.
    confirm_seeds_drawn: dict[str, int] = {}


@dataclass(frozen=True)
class Overrides:
    """Flags given together with --resume; None means "not given, keep the original"."""

    provider: str | None = None
    model: str | None = None
    script: Path | None = None
    paths: list[Path] | None = None
    suites: list[str] | None = None
    case_glob: str | None = None
    features: list[str] | None = None
    meta: dict[str, str] | None = None
    limit: int | None = None
    repeats: int | None = None
    timeout_s: float | None = None
    shard: tuple[int, int] | None = None
    # Sampling: refused unless what the run started with (they would change how the
    # remaining cases are sampled).
    temperature: float | None = None
    seed: int | None = None
    samples: int | None = None
    # `--restart-per-case`: given, the procedure with `cooldown_s` (None: 0); not given, the
    # run keeps the procedure it started with (`cooldown_s` still overriding its pause).
    restart_per_case: bool = False
    cooldown_s: float | None = None


@dataclass
class ResumeState:
    header: RunResult
    finished: dict[str, CaseResult] = field(default_factory=dict)


def start_fresh(out_dir: Path, request: RunRequest, provider_name: str, header: RunResult) -> None:
    """Record a new run in `out_dir`: its manifest, and no journal or results yet.

    What an earlier run left in the same directory goes first: appending to its journal would
    let a later resume mistake its cases for this run's, and its results.json, were this run
    killed, would be read by `compare` as this run's.
    """
    for stale in (JOURNAL, RESULTS_JSON, RESULTS_TOML):
        try:
            (out_dir / stale).unlink(missing_ok=True)
        except IsADirectoryError:
            raise BadInputError(
                "is a directory where evalctl writes a file; remove it or pass another --out",
                file=str(out_dir / stale),
            ) from None
        except OSError as exc:
            error = userfiles.environment_error(exc, "clear the run directory", out_dir)
            if error is None:
                raise
            raise error from None
    manifest = Manifest(
        selection=selection_of(request, provider_name), header=header, confirm=request.confirm
    )
    write_json_atomic(out_dir / MANIFEST, manifest)


def record_drawn(out_dir: Path, suite: str, seeds: list[int]) -> dict[str, int]:
    """Record in the manifest that confirmation `seeds` of `suite` are handed out, before
    their samples are drawn: a run killed while drawing them resumes above them. Returns the
    record as it now stands."""
    manifest = read_manifest(out_dir)
    drawn = dict(manifest.confirm_seeds_drawn)
    highest = max(seeds, default=None)
    if highest is not None and highest > drawn.get(suite, -1):
        drawn[suite] = highest
        manifest = manifest.model_copy(update={"confirm_seeds_drawn": drawn})
        write_json_atomic(out_dir / MANIFEST, manifest)
    return drawn


def resume_command(out_dir: Path, plan: ConfirmPlan | None) -> str:
    """The command that continues the run in `out_dir`, naming the baseline and the number
    of confirmation samples it was started with (the interrupt hint prints it)."""
    argv = ["evalctl", "run", "--resume", str(out_dir)]
    if plan is not None:
        argv += ["--baseline", plan.baseline_path]
        argv += ["--confirm", "auto" if plan.samples is None else str(plan.samples)]
    return shlex.join(argv)


def read_manifest(run_dir: Path) -> Manifest:
    path = run_dir / MANIFEST
    if not run_dir.is_dir():
        raise BadInputError("not a run directory (no such directory)", file=str(run_dir))
    if not path.exists() and not path.is_symlink():
        raise BadInputError(
            "no manifest.json: not a run directory, or written by an evalctl without resume",
            file=str(path),
            hint="pass the directory `evalctl run` printed (the one holding journal.jsonl)",
        )
    data = userfiles.read_json(path, what="run manifest")
    if not isinstance(data, dict):
        raise BadInputError("not a run manifest (not a JSON object)", file=str(path))
    check_schema_version(Document(path=path, data=data), supported("manifest"))
    try:
        data = upgrade("manifest", data)
    except ValueError as exc:  # an older version holding what only a newer one has
        raise BadInputError(f"unreadable manifest: {exc}", file=str(path)) from None
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise BadInputError(
            f"unreadable manifest: {userfiles.validation_message(err)}",
            file=str(path),
            field=userfiles.field_path(err["loc"]) or None,
        ) from None


def resume_request(
    run_dir: Path,
    given: Overrides,
    *,
    concurrency: int | None = None,
    show_progress: bool = True,
    judge_cache: bool = True,
    tools_exec: bool = True,
    confirm: ConfirmPlan | None = None,
) -> RunRequest:
    """The request that continues the run in `run_dir`, refusing flags that contradict it."""
    manifest = resume_point(run_dir, given)
    return resumed_request(
        run_dir,
        manifest,
        given,
        concurrency=concurrency,
        show_progress=show_progress,
        judge_cache=judge_cache,
        tools_exec=tools_exec,
        confirm=confirm,
    )


def resume_point(run_dir: Path, given: Overrides) -> Manifest:
    """The manifest of the run in `run_dir`, after refusing the flags that contradict it:
    another selection, or other sampling."""
    manifest = read_manifest(run_dir)
    original = manifest.selection
    asked: dict[str, tuple[Any, Any]] = {
        "--provider": (given.provider, original.provider),
        "--model": (given.model, original.model),
        "--script": (absolute(given.script) if given.script else None, original.script),
        "--cases": ([absolute(p) for p in given.paths] if given.paths else None, original.paths),
        "--suite": (sorted(given.suites) if given.suites else None, sorted(original.suites)),
        "--case": (given.case_glob, original.case_glob),
        "--feature": (
            sorted(given.features) if given.features else None,
            sorted(original.features),
        ),
        "--meta": (given.meta or None, original.meta),
        "--limit": (given.limit, original.limit),
        "--repeats": (given.repeats, original.repeats),
        "--timeout": (given.timeout_s, original.timeout_s),
        "--shard": (given.shard, original.shard),
    }
    for flag, (value, recorded) in asked.items():
        if value is not None and value != recorded:
            raise BadInputError(
                f"run {manifest.header.run_id} was started with {_show(recorded)}, not "
                f"{_show(value)}; a resumed run keeps its original selection",
                field=flag,
                hint="drop the flag to resume as started, or start a new run without --resume",
            )
    started = manifest.header.settings
    sampling = (
        ("--temperature", given.temperature, started.temperature),
        ("--seed", given.seed, started.seed),
        ("--samples", given.samples, started.samples_per_case),
    )
    for flag, value, recorded in sampling:
        if value is not None and value != recorded:
            was = "unset" if recorded is None else recorded
            raise BadInputError(
                f"the run was started with {flag} {was}, not {value}; a resumed run "
                "keeps its original sampling",
                field=flag,
                hint="drop the flag to resume as started, or start a new run without --resume",
            )
    return manifest


def resumed_confirm(
    manifest: Manifest, given: ConfirmPlan | None, samples: int | None, samples_given: bool
) -> ConfirmPlan | None:
    """The confirmation plan the run in `manifest` resumes with: the one it started with.
    `given` (the plan made from --baseline given now) must hold what the recorded baseline
    held, and --confirm given now (`samples`, None for auto) must be what it started with;
    anything else is refused, as is --baseline for a run started without one: a resumed
    run keeps the gate it started with."""
    recorded = manifest.confirm
    run_id = manifest.header.run_id
    again = "drop the flag to resume as started, or start a new run without --resume"
    if given is not None:
        if recorded is None:
            raise BadInputError(
                f"run {run_id} was started without --baseline; a resumed run keeps the gate "
                "it started with",
                field="--baseline",
                hint=again,
            )
        if not recorded.same_baseline(given):
            raise BadInputError(
                f"run {run_id} was started with --baseline {recorded.baseline_path}; "
                f"{given.baseline_path} holds other counts (another baseline, or the file "
                "changed since): a resumed run keeps the gate it started with",
                field="--baseline",
                hint=again,
            )
    if samples_given:
        if recorded is None:
            raise BadInputError(
                f"run {run_id} was started without --baseline: there is nothing to confirm against",
                field="--confirm",
                hint=again,
            )
        if samples != recorded.samples:
            raise BadInputError(
                f"run {run_id} was started with --confirm {_samples(recorded.samples)}, not "
                f"{_samples(samples)}; a resumed run keeps the gate it started with",
                field="--confirm",
                hint=again,
            )
    return recorded


def _samples(samples: int | None) -> str:
    return "auto" if samples is None else str(samples)


def resumed_request(
    run_dir: Path,
    manifest: Manifest,
    given: Overrides,
    *,
    concurrency: int | None = None,
    show_progress: bool = True,
    judge_cache: bool = True,
    tools_exec: bool = True,
    confirm: ConfirmPlan | None = None,
) -> RunRequest:
    """The complete request that continues the run in `run_dir` (`manifest`, from
    `resume_point`): its selection and sampling as it started, the procedure it started
    with unless `given` names one, and the confirmation plan it started with (`confirm`:
    the one `resumed_confirm` checked, else the manifest's)."""
    return request_of(
        manifest.selection,
        manifest.header.settings,
        run_dir,
        restart_per_case=given.restart_per_case,
        cooldown_s=given.cooldown_s,
        concurrency=concurrency,
        show_progress=show_progress,
        judge_cache=judge_cache,
        tools_exec=tools_exec,
        confirm=confirm if confirm is not None else manifest.confirm,
    )


def _show(value: Any) -> str:
    if value is None:
        return "no value"
    if isinstance(value, tuple):
        return f"{value[0]}/{value[1]}"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "none"
    return repr(value)


def load_state(
    run_dir: Path, provider: Provider, suites: list[Suite], keys: list[str]
) -> ResumeState:
    """The original header and the finished cases, after checking the run can go on as it
    started: the same provider and model, the same suites at the same versions, and every
    journaled case still among `keys` (the cases selected now)."""
    manifest = read_manifest(run_dir)
    header = manifest.header
    recorded = header.provider
    now = (provider.name, provider.model, provider.model_sha256)
    if now != (recorded.name, recorded.model, recorded.model_sha256):
        raise BadInputError(
            f"the run was started on {recorded.name} · {recorded.model} "
            f"(sha256 {recorded.model_sha256 or '-'}), the provider now reports "
            f"{provider.name} · {provider.model} (sha256 {provider.model_sha256 or '-'}); "
            "results from two models cannot be one run",
            file=str(run_dir / MANIFEST),
            field="header.provider",
        )
    versions = {s.name: s.table.version for s in suites}
    if [s.name for s in suites] != header.settings.suites or versions != (
        header.settings.suite_versions
    ):
        raise BadInputError(
            f"the suites changed since the run started: it ran {_versions(header)}, the case "
            f"files now hold {_versions_of(versions)}",
            file=str(run_dir / MANIFEST),
            field="header.settings.suite_versions",
        )
    journal_path = run_dir / JOURNAL
    repair_journal(journal_path)
    finished: dict[str, CaseResult] = {}
    for case in Journal(journal_path).read():
        finished[case.key] = case  # a case journaled twice: the later entry wins
    gone = sorted(set(finished) - set(keys))
    if gone:
        raise BadInputError(
            f"journaled cases are no longer in the case files: {', '.join(gone[:5])}",
            file=str(journal_path),
            hint="the case files changed since the run started; start a new run",
        )
    return ResumeState(header=header, finished=finished)


def _versions(header: RunResult) -> str:
    return _versions_of(
        {s: header.settings.suite_versions.get(s, "?") for s in header.settings.suites}
    )


def _versions_of(versions: dict[str, str]) -> str:
    return ", ".join(f"{name} v{version}" for name, version in versions.items()) or "no suites"


def repair_journal(path: Path) -> None:
    """Cut a last line left half-written by a kill (under the journal's lock: `Journal.repair`)."""
    Journal(path).repair()
