"""`evalctl compare BASELINES_DIR MATRIX_DIR`: each cell of a matrix run gated on its own
baseline, `<BASELINES_DIR>/<cell-id>.json` (what `evalctl baseline --from MATRIX_DIR`
writes). The exit is the worst of the cells' (a regression over an unscored case, as in one
comparison), and the verdict names the cell and the cases of each regression.

A cell without a baseline file is `new`: listed, with the command that records it, and not
gated, as a new case is not; a matrix none of whose cells has a baseline is bad input, since
it would gate nothing.
"""

from __future__ import annotations

from pathlib import Path

from evalctl.baselines.comparison import GateVerdict
from evalctl.baselines.gating import GateOptions, gate_matrix
from evalctl.cli.compare_render import render_matrix_comparison, step_summary
from evalctl.cli.output import emit
from evalctl.config import Settings


def compare_matrix(
    baselines_dir: Path,
    matrix_dir: Path,
    how: GateOptions,
    settings: Settings,
    as_json: bool,
    limit: int | None,
) -> GateVerdict:
    """Each cell gated (`baselines.gating.gate_matrix`), the verdict drawn or printed as JSON
    and each cell's appended to the job page."""
    result = gate_matrix(baselines_dir, matrix_dir, how, settings)
    emit(result, as_json, lambda out: render_matrix_comparison(out, limit))
    for c in result.cells:
        if c.comparison is not None:
            step_summary(c.comparison)
    return result.verdict
