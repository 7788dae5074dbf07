"""A comparison's orchestration: results read as a comparison reads them, one run gated on one
baseline (`gate_one`: the rule and alpha from the options, else the settings the command read
and passed down, never evalctl.toml again; the cost metric priced from their price table),
and a matrix run's cells each gated on its own `<cell-id>.json` (`gate_matrix`: the cells
share alpha equally; the exit is the worst cell's).

`evalctl compare` and `evalctl report --baseline` both gate through here, so they give the
same verdict; neither renders anything here (`cli/compare_render.py` draws it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, computed_field

from evalctl.baselines.comparison import Comparison, GateVerdict
from evalctl.cases.select import CaseFilter, case_filter
from evalctl.config import Settings
from evalctl.errors import BadInputError, ExitCode
from evalctl.results.document import Document, DocumentKind
from evalctl.results.models import RunResult

# A regression says more than an unscored case (as in one comparison's verdict).
_SEVERITY = (ExitCode.GATE_FAILED, ExitCode.INFRA)


@dataclass(frozen=True)
class GateOptions:
    """How a baseline comparison gates: --gate, --alpha (None: evalctl.toml's) and the
    --feature/--meta selection."""

    gate: str | None = None
    alpha: float | None = None
    selected: CaseFilter = field(default_factory=lambda: case_filter(None, None))


@dataclass(frozen=True)
class RunFile:
    """Run results already read and validated (`results.scores`), and the file they are."""

    path: Path
    run: RunResult

    @property
    def kind(self) -> DocumentKind:
        return "run"


def read_results(path: Path) -> Document | RunFile:
    """Results as a comparison reads them: the fast reader's run (conversations never built),
    else the document, whose validation words whatever is wrong with the file."""
    from evalctl.results.document import load_document, resolve_results_path
    from evalctl.results.scores import read_scores

    run = read_scores(path)
    if run is not None:
        return RunFile(resolve_results_path(path), run)
    return load_document(path, skip_conversations=True)


def run_of(doc: Document | RunFile) -> RunResult:
    """The run a results file holds, however it was read."""
    from evalctl.results.io import run_from_document

    return doc.run if isinstance(doc, RunFile) else run_from_document(doc)


def narrowed(run: RunResult, selected: CaseFilter) -> RunResult:
    """The run's cases `selected` picks, recorded as a narrowed selection so that the
    baseline's other cases count as not selected rather than orphaned (baselines.scope)."""
    if not selected:
        return run
    settings = run.settings.model_copy(
        update={
            "feature_filter": [*run.settings.feature_filter, *selected.features],
            "meta_filter": {**run.settings.meta_filter, **selected.meta},
        }
    )
    cases = [c for c in run.cases if selected.matches(c.features, c.metadata)]
    return run.model_copy(update={"cases": cases, "settings": settings})


def gate_one(
    baseline_doc: Document, run_doc: Document | RunFile, how: GateOptions, settings: Settings
) -> Comparison:
    """One run gated on one baseline: the comparison every renderer draws. `settings`: the
    command's (`compare_gate`, `compare_alpha`, `prices`), where --gate/--alpha give none."""
    from evalctl.baselines.gate import compare_baseline, rule_named
    from evalctl.baselines.model import baseline_from_document
    from evalctl.cost import usage_pricer

    baseline = baseline_from_document(baseline_doc)
    run = narrowed(run_of(run_doc), how.selected)
    refuse_repeated_seeds(run, run_doc.path)
    gate, alpha = gate_defaults(how, settings)
    rule = rule_named(gate, baseline, run, alpha)
    return compare_baseline(
        baseline,
        run,
        results_path=run_doc.path,
        baseline_path=baseline_doc.path,
        rule=rule,
        # The price reaches the gate as data: one price, looked up once for the run.
        cost_of=usage_pricer(run.provider.name, run.provider.model, settings.prices),
    )


def refuse_repeated_seeds(run: RunResult, path: Path) -> None:
    """Bad input (exit 2, naming the file and case) where two of a case's sampled attempts
    were sent the same seed: a copy of a sample is no new evidence, and counting it would
    shrink the gate's p-values by nothing but repetition. Sampled: scored, with a seed and a
    temperature above 0 recorded; greedy repeats (temperature 0, or no sampling recorded)
    answer alike by design and keep counting as repeats."""
    for case in run.cases:
        seen: set[int] = set()
        for attempt in case.attempts:
            sampling = attempt.sampling
            if attempt.status not in ("pass", "fail") or sampling is None:
                continue
            if sampling.seed is None or not sampling.temperature:
                continue
            if sampling.seed in seen:
                raise BadInputError(
                    f"seed {sampling.seed} was sent to two of the case's sampled attempts: a "
                    "copy of a sample is not a new one, so the gate will not count it twice",
                    file=str(path),
                    case_id=case.key,
                    field="attempts",
                    hint="run the cases again (a run resumed by an older evalctl could "
                    "confirm a case twice with the same seeds)",
                )
            seen.add(sampling.seed)


def gate_defaults(how: GateOptions, settings: Settings) -> tuple[str, float]:
    """The rule of a suite that names none, and the false-alarm budget, that a comparison
    gates by: --gate and --alpha where given, else the settings' `compare_gate` and
    `compare_alpha`. The one place they are read: `run --baseline` plans its confirmation by
    them too (cli/confirm_option.py), so it re-samples what the gate will test."""
    gate = how.gate or settings.compare_gate
    return gate, settings.compare_alpha if how.alpha is None else how.alpha


def cell_alpha(alpha: float | None, cells: int, settings: Settings) -> float:
    """Each cell's share of the one false-alarm budget (None: the settings' compare_alpha):
    a matrix's cells share it equally."""
    return (settings.compare_alpha if alpha is None else alpha) / max(cells, 1)


class CellComparison(BaseModel):
    cell: str
    provider: str
    model: str | None = None
    prompt: str | None = None
    # gated: compared with its baseline; new: no baseline file; skipped: the cell did not run.
    outcome: Literal["gated", "new", "skipped"]
    baseline_file: str
    results_file: str | None = None
    reason: str | None = None
    comparison: Comparison | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> ExitCode:
        return self.comparison.exit_code if self.comparison else ExitCode.OK


class MatrixComparison(BaseModel):
    kind: Literal["matrix_comparison"] = "matrix_comparison"
    baselines_dir: str
    matrix_dir: str
    run_id: str
    cells: list[CellComparison]

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdict(self) -> GateVerdict:
        gated = [c for c in self.cells if c.comparison is not None]
        for code in _SEVERITY:
            failing = [c for c in gated if c.exit_code == code]
            if failing:
                return GateVerdict(
                    exit_code=code,
                    reasons=[
                        f"cell {c.cell}: {reason}"
                        for c in failing
                        if c.comparison is not None
                        for reason in c.comparison.verdict.reasons
                    ],
                    hint=next((c.comparison.verdict.hint for c in failing if c.comparison), None),
                )
        return GateVerdict(exit_code=ExitCode.OK)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> ExitCode:
        return self.verdict.exit_code


def gate_matrix(
    baselines_dir: Path, matrix_dir: Path, how: GateOptions, settings: Settings
) -> MatrixComparison:
    """Each cell of the matrix run in `matrix_dir` gated on `<baselines_dir>/<cell-id>.json`
    (alpha shared by the cells); a cell without a baseline file is `new`, one that did not
    run `skipped`. Bad input when no cell has a baseline: it would gate nothing."""
    from evalctl.results.document import load_document
    from evalctl.results.matrix import cell_results_path, read_matrix

    index = read_matrix(matrix_dir)
    # One budget for the whole exit code: the cells share alpha equally.
    per_cell = GateOptions(
        how.gate, cell_alpha(how.alpha, len(index.cells), settings), how.selected
    )
    if not baselines_dir.is_dir():
        raise BadInputError(
            "a matrix run is gated against a directory of baselines, one per cell",
            file=str(baselines_dir),
            hint=f"evalctl compare baselines/ {matrix_dir}",
        )
    cells: list[CellComparison] = []
    for cell in index.cells:
        baseline = baselines_dir / f"{cell.id}.json"
        entry = CellComparison(
            cell=cell.id,
            provider=cell.provider,
            model=cell.model,
            prompt=cell.prompt,
            outcome="skipped",
            baseline_file=str(baseline),
            reason=cell.skip_reason,
        )
        if cell.results is not None:
            results = cell_results_path(matrix_dir, cell)
            entry.results_file = str(results)
            if baseline.is_file():
                entry.outcome = "gated"
                entry.comparison = gate_one(
                    load_document(baseline, skip_conversations=True),
                    read_results(results),
                    per_cell,
                    settings,
                )
            else:
                entry.outcome = "new"
                entry.reason = "no baseline for this cell"
        cells.append(entry)
    if not any(c.outcome == "gated" for c in cells):
        raise BadInputError(
            "no cell of the matrix has a baseline here (expected <cell-id>.json: "
            + ", ".join(f"{c.cell}.json" for c in cells)
            + ")",
            file=str(baselines_dir),
            hint=f"record them with: evalctl baseline --from {matrix_dir}",
        )
    return MatrixComparison(
        baselines_dir=str(baselines_dir),
        matrix_dir=str(matrix_dir),
        run_id=index.run_id,
        cells=cells,
    )
