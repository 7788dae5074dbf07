"""Resuming a run that was interrupted or killed: `evalctl run --resume RUN_DIR`.

A run directory holds two things that make this possible:
- `manifest.json`, written atomically when the run starts: what was selected (provider,
  model, suites, cases, repeats, shard, ...) and the run's header (run_id, start time,
  settings, environment). SIGKILL never gives evalctl a chance to write anything at the end,
  so everything the final file needs apart from the cases is written at the start.
- `journal.jsonl`, one finished case per line, fsync'd as each case finishes
  (evalctl.runner.journal): a kill loses at most the cases in flight.

Resuming runs only the cases missing from the journal, with the original selection and
run_id, and writes the results file a clean run would have written. It refuses (exit 2) when
anything that decides the results differs: a flag naming another selection, a provider
reporting another model, or suite files that changed since.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from evalctl import userfiles
from evalctl.cases.schema import Suite
from evalctl.errors import BadInputError
from evalctl.providers.base import Provider
from evalctl.results.io import RESULTS_JSON, RESULTS_TOML, write_json_atomic
from evalctl.results.models import CaseResult, RunResult
from evalctl.runner.api import RunRequest
from evalctl.runner.confirm import ConfirmPlan
from evalctl.runner.journal import Journal
from evalctl.runner.recorded import Selection, absolute, request_of, selection_of

MANIFEST = "manifest.json"
JOURNAL = "journal.jsonl"
MANIFEST_VERSION: Final = 1


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = MANIFEST_VERSION
    kind: Literal["run_manifest"] = "run_manifest"
    selection: Selection
    # The run's header: everything of the final RunResult but the cases and the summary.
    header: RunResult


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
    manifest = Manifest(selection=selection_of(request, provider_name), header=header)
    write_json_atomic(out_dir / MANIFEST, manifest)


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
    text = userfiles.read_text(path, what="run manifest")
    try:
        return Manifest.model_validate_json(text)
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
    `resume_point`): its selection and sampling as it started, and the procedure it started
    with unless `given` names one."""
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
        confirm=confirm,
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
