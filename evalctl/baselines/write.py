"""Building a baseline from a run, refusing runs that would poison it, and writing it.

A baseline is what CI holds every later run to, so a bad one silently lowers the bar for
months. Two runs are refused outright: one where too few cases pass (the provider or the
prompt was broken that day) and one where any case ended in an infrastructure error (its
expectation would be recorded from a crash, not from the model).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from evalctl import __version__
from evalctl.baselines.model import Baseline, BaselineStatus, PassCount
from evalctl.baselines.scope import in_scope
from evalctl.errors import BadInputError, GateFailedError
from evalctl.results.io import write_json_atomic
from evalctl.results.models import CheckStatus, RunResult
from evalctl.results.text import plural

DEFAULT_MIN_PASS_RATE = 0.5
# Provider names become file names; keep them to a safe, portable alphabet.
_PROVIDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_LISTED = 5  # case keys quoted in a refusal before "and N more"


def build_baseline(run: RunResult, min_pass_rate: float = DEFAULT_MIN_PASS_RATE) -> Baseline:
    """The baseline for `run`, or GateFailedError saying why the run is not fit to be one.

    Skipped cases are left out (see `skipped_cases`); flaky cases are recorded as flaky.
    The pass rate is recomputed from the cases, not read from the file's summary.
    """
    if not 0.0 <= min_pass_rate <= 1.0:
        raise BadInputError(
            f"must be between 0 and 1, got {min_pass_rate}", field="--min-pass-rate"
        )
    if run.interrupted:
        raise GateFailedError(
            f"run {run.run_id} was interrupted: a baseline from it would miss the cases "
            "that never ran",
            hint="re-run to completion, then write the baseline",
        )
    errored = [c.key for c in run.cases if c.status == "error"]
    if errored:
        raise GateFailedError(
            f"refusing to write a baseline: {plural(len(errored), 'case')} ended in an "
            f"infrastructure error ({_quote(errored)}); their expectations would come from "
            "a failure of the provider, not from the model",
            hint="fix the provider (see each case's `error` in the results) and re-run",
        )
    scored = [c for c in run.cases if c.status in ("pass", "fail", "flaky")]
    if not scored:
        raise GateFailedError(
            f"refusing to write a baseline: run {run.run_id} has no scored cases "
            f"({len(run.cases)} in total, all skipped)"
        )
    passed = sum(1 for c in scored if c.status == "pass")
    rate = passed / len(scored)
    if rate < min_pass_rate:
        raise GateFailedError(
            f"refusing to write a baseline: only {passed} of {len(scored)} scored cases "
            f"passed ({_pct(rate)}), below the minimum of {_pct(min_pass_rate)}; a run this broken "
            "would lower the bar for every later compare",
            hint="check the provider and prompt, or pass --min-pass-rate to lower the bar "
            "deliberately",
        )
    statuses: dict[str, BaselineStatus] = {}
    counts: dict[str, PassCount] = {}
    checks: dict[str, dict[str, CheckStatus]] = {}
    for case in sorted(scored, key=lambda c: c.key):
        # Each check's outcome (of the last repeat), so compare can see a check regress inside
        # a case that fails either way.
        if case.checks:
            checks[case.key] = {c.name: c.status for c in case.checks}
        # The scored filter above guarantees one of the three; spelled out for the type checker.
        statuses[case.key] = (
            "pass" if case.status == "pass" else "flaky" if case.status == "flaky" else "fail"
        )
        passed, runs = case.pass_counts()
        # Only repeated cases: one run says nothing a status does not (docs/flaky.md).
        if runs > 1:
            counts[case.key] = PassCount(passed=passed, runs=runs)
    return Baseline(
        provider=run.provider.name,
        model=run.provider.model,
        model_sha256=run.provider.model_sha256,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        evalctl_version=__version__,
        source_run_id=run.run_id,
        baselines=statuses,
        pass_counts=counts,
        checks=checks,
        min_pass_rate=min_pass_rate,
    )


def merge_baseline(existing: Baseline, fresh: Baseline, run: RunResult) -> tuple[Baseline, int]:
    """Fold `fresh` (built from a `--suite`/`--case` filtered `run`) into `existing`.

    Entries the run selected are replaced by `fresh` (dropped if the case is gone); entries
    outside its selection are kept, so narrowing a run cannot erase other suites'
    expectations. Returns the merged baseline and how many entries were kept. Refuses when
    the two were measured on different models: the result would mix them.
    """
    if (existing.provider, existing.model) != (fresh.provider, fresh.model) or (
        existing.model_sha256 and fresh.model_sha256 and existing.model_sha256 != fresh.model_sha256
    ):
        raise BadInputError(
            f"the existing baseline is for {existing.provider}/{existing.model}, this run used "
            f"{fresh.provider}/{fresh.model}; a run narrowed with --suite/--case cannot be "
            "merged into it",
            field="--out",
            hint="run every suite to replace the baseline, or write to another --out path",
        )
    kept = {k: v for k, v in existing.baselines.items() if not in_scope(run, k)}
    merged = dict(sorted({**kept, **fresh.baselines}.items()))
    kept_counts = {k: v for k, v in existing.pass_counts.items() if k in kept}
    counts = dict(sorted({**kept_counts, **fresh.pass_counts}.items()))
    kept_checks = {k: v for k, v in existing.checks.items() if k in kept}
    checks = dict(sorted({**kept_checks, **fresh.checks}.items()))
    # The merged file is only as strict as the laxest run that fed it.
    bars = [b for b in (existing.min_pass_rate, fresh.min_pass_rate) if b is not None]
    update = {
        "baselines": merged,
        "pass_counts": counts,
        "checks": checks,
        "min_pass_rate": min(bars, default=None),
    }
    return fresh.model_copy(update=update), len(kept)


def skipped_cases(run: RunResult) -> list[str]:
    """Keys of the cases `build_baseline` leaves out because they were skipped."""
    return sorted(c.key for c in run.cases if c.status == "skipped")


def baseline_path(baselines_dir: Path, provider: str) -> Path:
    """`<baselines_dir>/<provider>.json`, refusing names that would escape the directory."""
    if not _PROVIDER_NAME.match(provider):
        raise BadInputError(
            f"provider name {provider!r} cannot be used as a file name", field="--provider"
        )
    return baselines_dir / f"{provider}.json"


def write_baseline(baseline: Baseline, path: Path) -> Path:
    """Atomically write `baseline` to `path` (creating its directory); return the path."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInputError(f"cannot create directory: {exc.strerror}", file=str(path)) from None
    write_json_atomic(path, baseline)
    return path


def _pct(rate: float) -> str:
    # 0.5 -> "50%", 0.1667 -> "16.7%": as precise as the figure needs, no more.
    return f"{rate * 100:.1f}".removesuffix(".0") + "%"


def _quote(keys: list[str]) -> str:
    shown = ", ".join(keys[:_LISTED])
    rest = len(keys) - _LISTED
    return f"{shown} and {rest} more" if rest > 0 else shown
