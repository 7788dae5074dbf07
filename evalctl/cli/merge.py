"""`evalctl merge`: join the shards of a run into one results file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel
from rich.markup import escape

from evalctl.cli import options
from evalctl.cli.output import emit, stdout
from evalctl.errors import BadInputError
from evalctl.results.models import Summary
from evalctl.results.text import plural


class MergeOutput(BaseModel):
    run_id: str
    results_path: str
    shards: list[str]
    summary: Summary


def render(out: MergeOutput) -> None:
    s = out.summary
    stdout.print(
        escape(f"merged {len(out.shards)} shards into {out.results_path} (run {out.run_id})"),
        soft_wrap=True,
    )
    stdout.print(
        f"{s.passed}/{s.total} passed · {s.failed} failed · {s.flaky} flaky · "
        f"{plural(s.errors, 'error')} · {s.skipped} skipped"
    )


def merge(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(
            metavar="RUN_DIR...", help="Each shard's run directory (or its results.json)."
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory for the merged results.")],
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Merge the shards of one run (`evalctl run --shard i/n`) into one results file.

    The merged file is what the unsharded run would have written: gate it with one compare.

    Exit 2, naming the files, when shards overlap, one is missing or interrupted,
    or they come from different runs (provider, model, weights, suite versions, repeats...).
    """
    from evalctl.results.document import resolve_results_path
    from evalctl.results.io import read_run, write_run
    from evalctl.runner.merge import merge_shards

    if out.exists() and not out.is_dir():
        raise BadInputError(
            "exists and is not a directory; --out names the directory for the merged results",
            file=str(out),
            field="--out",
        )
    shards = [(resolve_results_path(p), read_run(p)) for p in run_dirs]
    merged = merge_shards(shards, prices=options.settings_from_env().prices)
    results_path = write_run(merged, out)
    output = MergeOutput(
        run_id=merged.run_id,
        results_path=str(results_path),
        shards=[str(path) for path, _ in shards],
        summary=merged.summary,
    )
    emit(output, as_json, render)


def register(app: typer.Typer) -> None:
    app.command("merge")(merge)
