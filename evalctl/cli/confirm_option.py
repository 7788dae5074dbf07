"""`run --baseline B --confirm R|auto|0`: the flags, and the plan the runner confirms by.

The runner reads no baseline (runner and baselines are sibling layers), so the command line
turns the baseline file into a `ConfirmPlan`: each case's and check's baseline counts (a
one-sample baseline counts a status as one sample), how each suite was sampled, and the
shares of the false-alarm budget (`baselines.budget`) the gate will test at.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from evalctl.baselines.budget import Budget
from evalctl.baselines.gating import GateOptions, gate_defaults
from evalctl.baselines.model import Baseline, read_baseline
from evalctl.config import Settings
from evalctl.confirmstats import MAX_CONFIRM_SAMPLES
from evalctl.errors import BadInputError
from evalctl.runner.confirm import ConfirmPlan
from evalctl.stats import ONE_SAMPLE

if TYPE_CHECKING:
    from evalctl.runner.resume import Manifest

BASELINE = typer.Option(
    "--baseline",
    metavar="FILE",
    help="The baseline `compare` will gate on: cases whose pass rate dropped below it are "
    "re-sampled (--confirm) so the gate can tell a broken case from noise.",
)
CONFIRM = typer.Option(
    "--confirm",
    metavar="R|auto|0",
    help="With --baseline: confirmation samples per dropped case (fresh seeds from the "
    "baseline's K on). auto (default): the fewest that make a clean case failing all of them "
    "significant for the run's size; 0: off.",
)


def parse_confirm(value: str | None) -> int | None:
    """`auto` (or not given) -> None; a whole number 0..MAX_CONFIRM_SAMPLES -> itself."""
    if value is None or value.strip().lower() == "auto":
        return None
    try:
        count = int(value)
    except ValueError:
        count = -1
    if not 0 <= count <= MAX_CONFIRM_SAMPLES:
        raise BadInputError(
            f"must be 'auto' or a whole number of samples from 0 (off) to "
            f"{MAX_CONFIRM_SAMPLES}, not {value!r}",
            field="--confirm",
        )
    return count


def confirm_plan(
    baseline_path: Path | None, confirm: str | None, settings: Callable[[], Settings]
) -> ConfirmPlan | None:
    """The plan for `run --baseline`; None without --baseline. `--confirm` alone is bad
    usage: there is nothing to confirm against. The rule and alpha are the ones `compare`
    gates by (`gate_defaults` of `settings()`, read only where there is a baseline)."""
    samples = parse_confirm(confirm)
    if baseline_path is None:
        if confirm is not None:
            raise BadInputError(
                "needs --baseline: drops are confirmed against it", field="--confirm"
            )
        return None
    baseline = read_baseline(baseline_path)
    gate, alpha = gate_defaults(GateOptions(), settings())
    return plan_from(baseline, str(baseline_path), samples, Budget(alpha), default_rule=gate)


def resumed_plan(
    manifest: Manifest,
    baseline_path: Path | None,
    confirm: str | None,
    settings: Callable[[], Settings],
) -> ConfirmPlan | None:
    """The plan a resumed run confirms by: the one its manifest recorded, which --baseline
    and --confirm given again must match (runner.resume.resumed_confirm). A manifest from
    before the plan was recorded takes them as given."""
    from evalctl.runner.resume import resumed_confirm

    if not manifest.confirm_recorded:
        return confirm_plan(baseline_path, confirm, settings)
    given = confirm_plan(baseline_path, None, settings) if baseline_path is not None else None
    return resumed_confirm(manifest, given, parse_confirm(confirm), confirm is not None)


def plan_from(
    baseline: Baseline,
    path: str,
    samples: int | None,
    budget: Budget,
    *,
    default_rule: str = "statistical",
) -> ConfirmPlan:
    case_counts: dict[str, tuple[int, int]] = {}
    for key, status in baseline.baselines.items():
        counts = baseline.pass_counts.get(key)
        found = counts.as_tuple() if counts is not None else ONE_SAMPLE.get(status)
        if found is not None:
            case_counts[key] = found
    check_counts: dict[str, dict[str, tuple[int, int]]] = {}
    for key, checks in baseline.checks.items():
        for name, check_status in checks.items():
            if check_status in ONE_SAMPLE:
                check_counts.setdefault(key, {})[name] = ONE_SAMPLE[check_status]
    for key, counted in baseline.check_counts.items():
        for name, count in counted.items():
            check_counts.setdefault(key, {})[name] = count.as_tuple()
    return ConfirmPlan(
        baseline_path=path,
        samples=samples,
        alpha=budget.alpha,
        case_level=budget.cases,
        check_level=budget.checks,
        case_counts=case_counts,
        check_counts=check_counts,
        sampling=dict(baseline.sampling),
        default_rule="strict" if default_rule == "strict" else "statistical",
    )
