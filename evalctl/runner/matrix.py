"""A matrix run: the same selection once per cell (provider x model x prompt variant), each
cell an ordinary run in `<matrix dir>/<cell-id>/`, and the index `matrix.json` beside them.

`--provider all` is a matrix too: one cell per real provider, the unavailable ones recorded
as skipped with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from evalctl import userfiles
from evalctl.config import Settings
from evalctl.errors import BadInputError, ProviderUnavailableError
from evalctl.providers.registry import SPECS, ProviderOptions, traits
from evalctl.results.matrix import (
    MATRIX_FILE,
    MatrixCell,
    MatrixIndex,
    cell_id,
    is_matrix_dir,
    read_matrix,
    write_matrix,
)
from evalctl.runner.api import RunOutcome, RunRequest
from evalctl.runner.execute import InterruptedRunError, execute_run, new_run_id
from evalctl.runner.prompt_variant import template_problem

RESULTS_FILE = "results.json"


@dataclass(frozen=True)
class Cell:
    provider: str
    model: str | None = None  # None: the provider's default
    prompt: str | None = None  # the prompt variant's name
    template: str | None = None

    @property
    def id(self) -> str:
        return cell_id(self.provider, self.model, self.prompt)


@dataclass
class CellRun:
    cell: Cell
    outcome: RunOutcome | None = None
    skip_reason: str | None = None


@dataclass
class MatrixRun:
    run_id: str
    out_dir: Path
    index_path: Path
    index: MatrixIndex
    cells: list[CellRun]


@dataclass(frozen=True)
class MatrixSource:
    """Where the cells came from, for errors: the flags, or `[matrix]` in evalctl.toml."""

    providers: str = "--provider"
    models: str = "--model"
    prompts: str = "prompts"
    file: str | None = None


def plan_cells(
    providers: Sequence[str],
    models: Sequence[str],
    prompts: Mapping[str, str],
    source: MatrixSource = MatrixSource(),
) -> list[Cell]:
    """The cells of providers x models x prompt variants.

    A model `provider:model` whose prefix is one of `providers` runs on that provider only;
    any other model runs on every provider (a colon is kept: `llama3.1:8b` is an Ollama
    name). A provider no model applies to runs its default model.
    """
    if len(set(providers)) != len(providers):
        raise BadInputError("a provider is given twice", field=source.providers, file=source.file)
    for name in providers:
        if name not in SPECS:
            raise BadInputError(
                f"unknown provider {name!r} (known: {', '.join(SPECS)})",
                field=source.providers,
                file=source.file,
                hint="`evalctl providers` lists every one, plugins' included",
            )
    for name, template in prompts.items():
        problem = template_problem(template)
        if problem is not None:
            raise BadInputError(
                f"prompt variant {name!r}: {problem}",
                field=f"{source.prompts}.{name}",
                file=source.file,
            )
    shared: list[str] = []
    own: dict[str, list[str]] = {p: [] for p in providers}
    for model in models:
        prefix, sep, rest = model.partition(":")
        if sep and prefix in own:
            if not rest:
                raise BadInputError(
                    f"{model!r} names no model after the provider", field=source.models
                )
            own[prefix].append(rest)
        else:
            shared.append(model)
    variants: list[tuple[str | None, str | None]] = list(prompts.items()) or [(None, None)]
    cells: list[Cell] = []
    for provider in providers:
        models_here: list[str | None] = [*own[provider], *shared] or [None]
        for chosen in models_here:
            for variant, wrapper in variants:
                cells.append(Cell(provider, chosen, variant, wrapper))
    _refuse_clashes(cells, source)
    return cells


def _refuse_clashes(cells: list[Cell], source: MatrixSource) -> None:
    """Two cells whose ids are one directory (and one baseline file) would overwrite each
    other: `a/b` and `a_b` differ only in characters a file name cannot hold."""
    seen: dict[str, Cell] = {}
    for cell in cells:
        other = seen.setdefault(cell.id, cell)
        if other is not cell:
            raise BadInputError(
                f"cells {_describe(other)} and {_describe(cell)} would both be {cell.id!r}",
                field=source.models,
                file=source.file,
                hint="give each model once, and names that differ in letters or digits",
            )


def _describe(cell: Cell) -> str:
    return "/".join(p for p in (cell.provider, cell.model, cell.prompt) if p)


def check_available(
    cells: Sequence[Cell], request: RunRequest, settings: Settings, env: Mapping[str, str]
) -> None:
    """Refuse before any cell runs when one cannot (no API key, no model file): a matrix
    that stops at its third cell has spent the first two for nothing."""
    for cell in cells:
        if request.script is None and traits(cell.provider).replays_script:
            # A missing flag, as for one run: bad input, not an unavailable provider.
            raise BadInputError(
                f"cell {cell.id}: the {cell.provider} provider needs --script FILE (a reply "
                "script)",
                field="--script",
            )
        options = ProviderOptions(
            settings=settings, env=env, model=cell.model, script=request.script
        )
        reason = traits(cell.provider).unavailable_reason(options)
        if reason is not None:
            raise ProviderUnavailableError(
                f"cell {cell.id}: provider {cell.provider} is unavailable: {reason}",
                hint="`evalctl providers` says what each one needs",
            )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def execute_matrix(
    request: RunRequest,
    cells: Sequence[Cell],
    settings: Settings,
    env: Mapping[str, str],
    *,
    skipped: Sequence[CellRun] = (),
    label: str = "matrix",
    on_interrupt: Callable[[MatrixRun], None] | None = None,
) -> MatrixRun:
    """Run each cell in turn into `<out>/<cell-id>/`; `matrix.json` is rewritten after each,
    so an interrupted matrix still indexes the cells it finished (and `on_interrupt` gets
    them, the interrupted one last, before the interruption goes on up)."""
    run_id = new_run_id(label)
    out_dir = request.out_dir or settings.results_dir / run_id
    index = MatrixIndex(
        run_id=run_id,
        started_at=_now(),
        cells=[_index_cell(run) for run in skipped],
    )
    runs: list[CellRun] = list(skipped)
    index_path = out_dir / MATRIX_FILE
    for cell in cells:
        one = replace(
            request,
            provider=cell.provider,
            model=cell.model,
            prompt_template=cell.template,
            out_dir=out_dir / cell.id,
        )
        # The cell is indexed before it starts, as not finished: a matrix killed during it
        # (SIGKILL leaves no chance to write anything) still lists it, and `run --resume`
        # of its directory puts its results in (`record_resumed_cell`).
        index.cells.append(
            _index_cell(CellRun(cell, skip_reason=unfinished_reason(out_dir, cell.id)))
        )
        _make_dir(out_dir)
        index_path = write_matrix(index, out_dir)
        try:
            outcome = execute_run(one, settings, env)
        except InterruptedRunError:
            # The interrupted cell wrote what it finished: index it with the cells before.
            partial = out_dir / cell.id / RESULTS_FILE
            if partial.is_file():
                index.cells[-1] = _index_cell(CellRun(cell), f"{cell.id}/{RESULTS_FILE}")
                index_path = write_matrix(index, out_dir)
                if on_interrupt is not None:
                    on_interrupt(MatrixRun(run_id, out_dir, index_path, index, runs))
            raise
        run = CellRun(cell, outcome=outcome)
        runs.append(run)
        index.cells[-1] = _index_cell(run)
        index_path = write_matrix(index, out_dir)
    index.finished_at = _now()
    index_path = write_matrix(index, out_dir)
    return MatrixRun(run_id, out_dir, index_path, index, runs)


def _make_dir(out_dir: Path) -> None:
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        error = userfiles.environment_error(exc, "create the matrix directory", out_dir)
        if error is None:
            raise
        raise error from None


def unfinished_reason(out_dir: Path, cell: str) -> str:
    """What a cell that has not finished says in the index (and the reports) until it does."""
    return (
        f"did not finish (stopped or killed); `evalctl run --resume {out_dir / cell}` finishes it"
    )


def record_resumed_cell(run_dir: Path, results_path: Path) -> tuple[Path, MatrixIndex] | None:
    """A resumed run that is a matrix cell (its directory a cell's, beside `matrix.json`):
    put its results into the index, so the matrix reports, `compare` and `baseline --from`
    see the cell. Returns the matrix directory and its index; None for a run of its own."""
    matrix_dir = run_dir.resolve().parent
    if not is_matrix_dir(matrix_dir):
        return None
    index = read_matrix(matrix_dir)
    for position, cell in enumerate(index.cells):
        if cell.id == run_dir.resolve().name:
            results = f"{cell.id}/{results_path.name}"
            index.cells[position] = cell.model_copy(
                update={"results": results, "skip_reason": None}
            )
            write_matrix(index, matrix_dir)
            return matrix_dir, index
    return None


def _index_cell(run: CellRun, results: str | None = None) -> MatrixCell:
    cell = run.cell
    if run.outcome is not None:
        results = f"{cell.id}/{run.outcome.results_path.name}"
    return MatrixCell(
        id=cell.id,
        provider=cell.provider,
        model=cell.model,
        prompt=cell.prompt,
        prompt_template=cell.template,
        results=results,
        skip_reason=run.skip_reason,
    )
