"""`evalctl gate`: decide from `git diff` whether CI's quality job must run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from evalctl.cli import options
from evalctl.cli.output import emit, stdout
from evalctl.errors import BadInputError

if TYPE_CHECKING:  # the library is imported on use, to keep `evalctl --help` fast
    from evalctl.ci_tiers import GateDecision


def render(decision: GateDecision) -> None:
    # First line machine-greppable, the same key=value form GitHub outputs use.
    stdout.print(f"run={'true' if decision.run else 'false'}", markup=False, highlight=False)
    stdout.print(escape(f"reason: {decision.reason}"), soft_wrap=True)
    for match in decision.matches:
        stdout.print(escape(f"  {match.group} ({', '.join(match.patterns)}):"), soft_wrap=True)
        for path in match.files:
            stdout.print(escape(f"    {path}"), soft_wrap=True)


def _github_output(path: str, run: bool) -> None:
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"quality={'true' if run else 'false'}\n")
    except OSError as exc:
        raise BadInputError(
            f"cannot append to it: {exc.strerror}", file=path, field="GITHUB_OUTPUT"
        ) from None


def gate(
    changed_from: Annotated[
        str, typer.Option("--changed-from", metavar="REF", help="Base revision, e.g. origin/main.")
    ],
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Say whether CI's quality job must run (`run=true|false`), and why.

    Changed files: `git diff REF...HEAD`, plus uncommitted and untracked files,
    matched against the [gate] globs of evalctl.toml (prompts, cases, baselines, engine, ...).

    Exit 0 with a decision; also appends `quality=true|false` to $GITHUB_OUTPUT when set.
    Exit 2 for an unknown REF or outside a git repository.
    """
    from evalctl.ci_tiers import gate as decide

    settings = options.settings_from_env()
    decision = decide(changed_from, settings.gate, Path.cwd())
    github_output = options.environ().get("GITHUB_OUTPUT")
    if github_output:
        _github_output(github_output, decision.run)
    emit(decision, as_json, render)


def register(app: typer.Typer) -> None:
    app.command("gate")(gate)
