"""`evalctl compare`: gate a run on its baseline, or diff two runs.

Which comparison runs is decided by the files' content (`kind`, else their shape), not by
their names: BASELINE RESULTS gates; RESULTS_A RESULTS_B diffs.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import typer

from evalctl.baselines.comparison import GateVerdict
from evalctl.baselines.gating import GateOptions, gate_one, narrowed, read_results, run_of
from evalctl.cases.select import case_filter
from evalctl.cli import history_store, options
from evalctl.cli.compare_render import DEFAULT_ROWS, render_comparison, render_diff, step_summary
from evalctl.cli.output import emit
from evalctl.errors import BadInputError


def compare(
    first: Annotated[
        Path, typer.Argument(metavar="BASELINE|RESULTS_A", help="A baseline or results.")
    ],
    second: Annotated[
        Path, typer.Argument(metavar="RESULTS", help="Results (file or run directory).")
    ],
    show_all: Annotated[
        bool,
        typer.Option(
            "--all", help=f"List every case in each section (default: at most {DEFAULT_ROWS})."
        ),
    ] = False,
    gate: Annotated[
        str | None,
        typer.Option(
            "--gate",
            metavar="RULE",
            help="How a baseline comparison decides each case: statistical (a drop gates "
            "only when an exact test at --alpha says it is not noise) or strict (any "
            "pass -> fail gates). Default: compare_gate in evalctl.toml, else statistical.",
            show_default=False,
        ),
    ] = None,
    alpha: Annotated[
        float | None,
        typer.Option(
            "--alpha",
            help="The exit code's false-alarm budget: the chance, when nothing changed, that "
            "compare exits 1, across every suite, cases and checks, metrics and matrix cells. "
            "Default: compare_alpha in evalctl.toml, else 0.05.",
            show_default=False,
        ),
    ] = None,
    feature: Annotated[list[str] | None, options.FEATURE] = None,
    meta: Annotated[list[str] | None, options.META] = None,
    store: history_store.StoreOpt = None,
    no_store: history_store.NoStoreOpt = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> GateVerdict | None:
    """Gate results on a baseline, or diff two runs.

    BASELINE RESULTS: regressions, check regressions, metric regressions, orphaned,
    unscored, changes within noise, improvements and new cases; a line naming what differs
    when the baseline was recorded on another platform; each suite's tokens, latency and
    cost against the baseline's.

    Exit 1 on a regression, a check regression, a metric regression or an orphaned case,
    else 3 if a case could not be scored, else 0.

    Each suite's cases are judged exact, statistical or strict; the first line says which.
    Exact (answers that cannot vary: the scripted provider, retrieval cases, a target with
    deterministic = true): any pass -> fail is a regression.

    --gate statistical (default): a drop in pass rate is a regression only when an exact
    test says it is not noise. A run made with `run --baseline B` re-sampled its drops:
    the baseline is tested against those confirmation samples, one Holm family over every
    suite. Other runs: per-case and suite-level tests on the run's own samples. Other drops
    are "changed, within noise", with both rates and the p-value. Exit 1 with nothing
    changed happens in at most --alpha of runs (one budget: 70% cases, 20% checks, 10%
    metrics; a matrix's cells share it).

    --gate strict (or `gate = "strict"` in a suite's \\[suite] table): any pass -> fail (or
    flaky) is a regression, and a check pass -> fail inside a case that fails either way;
    a flaky baseline case gates only when the run's Wilson 95% interval lies wholly below
    the baseline's (docs/flaky.md).

    A metric gates only in a suite that asks for it in \\[suite.gate], on the cases both
    sides hold, when the run's value exceeds a one-sided prediction bound over the
    baseline's samples, raised by the tolerance, at a stated false-alarm rate shared by
    all the metric gates (docs/gating.md, "Metric gates").

    RESULTS_A RESULTS_B: per-case status changes and latency/token deltas; exit 0.

    --feature and --meta compare only the cases with those features and metadata labels
    (as the results recorded them); the baseline's other cases are "not selected".

    Malformed or mismatched files exit 2, naming the file and field.
    """
    from evalctl.baselines.diff import compare_runs
    from evalctl.results.document import load_document, require_kind
    from evalctl.results.io import run_from_document
    from evalctl.results.matrix import MATRIX_FILE, is_matrix_dir

    selected = case_filter(feature, meta)
    limit = None if show_all else DEFAULT_ROWS
    if second.name == MATRIX_FILE and second.is_file():
        second = second.parent  # the index stands for its matrix directory
    if is_matrix_dir(second):
        from evalctl.cli.compare_matrix import compare_matrix

        # One budget for the whole exit code: the cells share alpha (baselines.gating).
        return compare_matrix(
            first,
            second,
            GateOptions(gate, alpha, selected),
            options.read_only_settings(),
            as_json,
            limit,
        )
    # Statuses, checks and figures are all a comparison reads: skip the conversations.
    doc_a = load_document(first, skip_conversations=True)
    doc_b = read_results(second)
    if doc_a.kind == "baseline":
        settings = options.read_only_settings()
        cmp = gate_one(doc_a, doc_b, GateOptions(gate, alpha, selected), settings)
        emit(cmp, as_json, partial(render_comparison, limit=limit))
        step_summary(cmp)
        code = int(cmp.verdict.exit_code)
        history_store.record_verdict(
            settings, options.environ(), store, no_store, kind="compare",
            subject=str(doc_b.path),
            outcome="pass" if code == 0 else "fail", exit_code=code,
            body={"baseline": str(doc_a.path), "results": str(doc_b.path),
                  "summary": cmp.verdict.summary},
        )  # fmt: skip
        # The verdict, typed: `evalctl.cli.app` prints its line and exits with its code.
        return cmp.verdict
    if doc_a.kind == "run":
        if doc_b.kind == "baseline":
            raise BadInputError(
                "this is a baseline; it goes first: evalctl compare BASELINE RESULTS",
                file=str(doc_b.path),
                field="kind",
            )
        diff = compare_runs(
            narrowed(run_from_document(doc_a), selected),
            narrowed(run_of(doc_b), selected),
            path_a=doc_a.path,
            path_b=doc_b.path,
        )
        emit(diff, as_json, partial(render_diff, limit=limit))
        return None
    # Neither: let the kind check word the error for the first file.
    require_kind(doc_a, "baseline")
    return None


P = ParamSpec("P")
R = TypeVar("R")


def _gc_paused(command: Callable[P, R]) -> Callable[P, R]:
    """`command` with Python's cyclic garbage collector paused while it runs. A comparison
    builds a large structure that holds no garbage (a 10,000-case run is about a million
    objects) and ends; collections while it grows would traverse all of it again and again
    for nothing. Reference counting still frees everything as usual."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        paused = gc.isenabled()
        gc.disable()
        try:
            return command(*args, **kwargs)
        finally:
            if paused:
                gc.enable()

    return run


def register(app: typer.Typer) -> None:
    app.command("compare")(_gc_paused(compare))
