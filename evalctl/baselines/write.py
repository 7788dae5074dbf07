"""Building a baseline from a run, refusing runs that would poison it, and writing it.

A baseline is what CI holds every later run to, so a bad one silently lowers the bar for
months. Two runs are refused outright: one where too few cases pass (the provider or the
prompt was broken that day) and one where any case ended in an infrastructure error (its
expectation would be recorded from a crash, not from the model).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path

from evalctl import __version__, flock, userfiles
from evalctl.baselines.metrics import CostOf, case_metrics, figures
from evalctl.baselines.model import Baseline, BaselineStatus, CaseMetrics, PassCount, SuiteMetrics
from evalctl.baselines.scope import in_scope
from evalctl.config import ModelPrice
from evalctl.cost import usage_pricer
from evalctl.errors import BadInputError, GateFailedError
from evalctl.results.io import write_json_atomic
from evalctl.results.models import CaseResult, CheckStatus, RunResult
from evalctl.results.text import plural

DEFAULT_MIN_PASS_RATE = 0.5
# Provider names become file names; keep them to a safe, portable alphabet.
_PROVIDER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_LISTED = 5  # case keys quoted in a refusal before "and N more"


def build_baseline(
    run: RunResult,
    min_pass_rate: float = DEFAULT_MIN_PASS_RATE,
    prices: Mapping[str, ModelPrice] | None = None,
) -> Baseline:
    """The baseline for `run`, or GateFailedError saying why the run is not fit to be one.

    Skipped cases are left out (see `skipped_cases`); flaky cases are recorded as flaky.
    The pass rate is recomputed from the cases, not read from the file's summary: only
    `pass` cases count as passing, so a flaky case (some samples failed) counts against it.
    `prices` overlays the default price table for the metrics' cost (settings.prices).
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
    check_counts: dict[str, dict[str, PassCount]] = {}
    checks: dict[str, dict[str, CheckStatus]] = {}
    for case in sorted(scored, key=lambda c: c.key):
        # Each check's outcome (of the last repeat), so compare can see a check regress inside
        # a case that fails either way.
        if case.checks:
            checks[case.key] = {c.name: c.status for c in case.checks}
        if case.check_counts:
            check_counts[case.key] = dict(sorted(case.check_counts.items()))
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
        check_counts=check_counts,
        checks=checks,
        min_pass_rate=min_pass_rate,
        sampling={name: s for name, s in run.settings.sampled.items() if name in _suites(scored)},
        platform=run.platform,
        metrics=suite_metrics(run, scored, prices),
        case_metrics=_case_metrics(run, scored, prices),
    )


def _suites(cases: list[CaseResult]) -> set[str]:
    return {c.suite for c in cases}


def _pricer(run: RunResult, prices: Mapping[str, ModelPrice] | None) -> CostOf:
    # The one pricer the gate prices a run's samples with too (baselines.gating), so the
    # baseline's cost figures and a later run's are the same arithmetic.
    return usage_pricer(run.provider.name, run.provider.model, prices)


def _case_metrics(
    run: RunResult, scored: list[CaseResult], prices: Mapping[str, ModelPrice] | None = None
) -> dict[str, CaseMetrics]:
    """Per scored case, its output tokens, latency and cost in each sample (its scored
    attempts)."""
    cost_of = _pricer(run, prices)
    return {
        c.key: m for c in sorted(scored, key=lambda c: c.key) if (m := case_metrics(c, cost_of))
    }


def suite_metrics(
    run: RunResult, scored: list[CaseResult], prices: Mapping[str, ModelPrice] | None = None
) -> dict[str, SuiteMetrics]:
    """Per suite, output tokens, latency and cost of each sample r: over the suite's scored
    cases, each case's r-th scored attempt (an unsampled run has one sample)."""
    return suite_figures(_case_metrics(run, scored, prices))


def suite_figures(per_case: Mapping[str, CaseMetrics]) -> dict[str, SuiteMetrics]:
    """Per suite, the figures of each sample r over its cases in `per_case` (by case key), as
    a baseline keeps them (`SuiteMetrics`, rounded); r runs below the fewest samples a case
    has, so that every figure is over every case."""
    by_suite: dict[str, list[CaseMetrics]] = {}
    for key, measured in sorted(per_case.items()):
        by_suite.setdefault(key.partition("/")[0], []).append(measured)
    metrics: dict[str, SuiteMetrics] = {}
    for suite, cases in by_suite.items():
        values = figures(cases)
        cost = values["cost"]
        metrics[suite] = SuiteMetrics(
            output_tokens=[round(v, 2) for v in values["tokens_out"] or ()],
            latency_p50_ms=[round(v, 1) for v in values["latency_p50"] or ()],
            latency_p95_ms=[round(v, 1) for v in values["latency_p95"] or ()],
            cost_usd=None if cost is None else [round(v, 6) for v in cost],
        )
    return metrics


def _merged_metrics(
    existing: Baseline, fresh: Baseline, keys: list[str], case_metrics: dict[str, CaseMetrics]
) -> dict[str, SuiteMetrics]:
    """Per suite of the merged baseline: its figures drawn again from the cases' own where
    every case of it has them; else the existing file's where it keeps cases of the suite
    (the cases the run did not re-record keep their figures), else the fresh run's."""
    metrics: dict[str, SuiteMetrics] = {}
    for suite in sorted({k.partition("/")[0] for k in keys}):
        held = [k for k in keys if k.partition("/")[0] == suite]
        if all(k in case_metrics for k in held):
            metrics.update(suite_figures({k: case_metrics[k] for k in held}))
        elif suite in existing.metrics and any(k not in fresh.baselines for k in held):
            metrics[suite] = existing.metrics[suite]
        elif suite in fresh.metrics:
            metrics[suite] = fresh.metrics[suite]
    return metrics


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
    kept_check_counts = {k: v for k, v in existing.check_counts.items() if k in kept}
    check_counts = dict(sorted({**kept_check_counts, **fresh.check_counts}.items()))
    # Per suite: the fresh run's where it ran the suite, else the existing file's for the
    # suites it still has entries of. A suite the fresh run re-ran unsampled loses the old
    # sampling, as its counts are replaced too.
    suites = {k.partition("/")[0] for k in merged}
    ran = {k.partition("/")[0] for k in fresh.baselines}
    sampling = {
        **{n: v for n, v in existing.sampling.items() if n in suites and n not in ran},
        **fresh.sampling,
    }
    kept_case_metrics = {k: v for k, v in existing.case_metrics.items() if k in kept}
    case_metrics = dict(sorted({**kept_case_metrics, **fresh.case_metrics}.items()))
    # The merged file is only as strict as the laxest run that fed it.
    bars = [b for b in (existing.min_pass_rate, fresh.min_pass_rate) if b is not None]
    update = {
        "baselines": merged,
        "pass_counts": counts,
        "check_counts": check_counts,
        "checks": checks,
        "sampling": dict(sorted(sampling.items())),
        "metrics": _merged_metrics(existing, fresh, list(merged), case_metrics),
        "case_metrics": case_metrics,
        # The latest run's platform: the file's entries were not all drawn on it when the
        # earlier ones came from another machine, which `compare` cannot tell apart.
        "platform": fresh.platform or existing.platform,
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


@contextmanager
def baseline_lock(path: Path) -> Iterator[None]:
    """Hold `<path>.lock` for a read-merge-write of the baseline at `path`: two narrowed
    `baseline --out` into one file at once would otherwise each merge into the file as it was
    before the other wrote, and one suite's update would be lost. The lock file is deleted
    when released."""
    lock = path.with_name(path.name + ".lock")
    with ExitStack() as stack:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # Deleted when released: a user's repository would commit an empty lock file.
            stack.enter_context(flock.held(lock, remove=True))
        except OSError as exc:
            error = userfiles.environment_error(exc, "lock", lock)
            if error is None:
                raise
            raise error from None
        yield


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
