"""`evalctl cases list|validate`: inspect and check suite files."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from pydantic import BaseModel
from rich.table import Table

from evalctl.cases.loader import (
    SuiteErrors,
    discover,
    load_suite,
    load_suites,
    name_clashes,
    tool_exec_refusals,
)
from evalctl.cases.schema import Suite
from evalctl.cases.select import case_filter
from evalctl.cli import options
from evalctl.cli.output import emit, stdout
from evalctl.errors import BadInputError
from evalctl.results.text import plural

cases_app = typer.Typer(help="List and validate case suites.", no_args_is_help=True)


class CaseRow(BaseModel):
    key: str
    features: list[str]
    metadata: dict[str, str]
    description: str


class SuiteRow(BaseModel):
    name: str
    kind: str
    path: str
    cases: list[CaseRow]


class CasesListing(BaseModel):
    suites: list[SuiteRow]


class ValidationReport(BaseModel):
    files: list[str]
    suites: int
    cases: int


def _render_listing(listing: CasesListing) -> None:
    table = Table()
    for column in ("case", "features", "description"):
        table.add_column(column, overflow="fold")
    for suite in listing.suites:
        for case in suite.cases:
            table.add_row(case.key, ", ".join(case.features), case.description)
    stdout.print(table)
    total = sum(len(s.cases) for s in listing.suites)
    stdout.print(f"{plural(total, 'case')} in {plural(len(listing.suites), 'suite')}")


def _paths(paths: list[Path] | None, cases: list[Path] | None) -> list[Path] | None:
    """Suites given as arguments and/or as `--cases`, the flag `run` and `baseline` take, so
    a command line copied from one works in the other."""
    return [*(paths or []), *(cases or [])] or None


@cases_app.command("list")
def list_cases(
    paths: Annotated[list[Path] | None, typer.Argument(help="Suite files or directories.")] = None,
    suite: Annotated[list[str] | None, options.SUITE] = None,
    case: Annotated[list[str] | None, options.CASE] = None,
    feature: Annotated[list[str] | None, options.FEATURE] = None,
    meta: Annotated[list[str] | None, options.META] = None,
    cases: Annotated[list[Path] | None, options.CASES_PATH] = None,
    allow_outside_paths: Annotated[bool, options.ALLOW_OUTSIDE_PATHS] = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """List the cases of every suite."""
    options.path_rule(allow_outside_paths)
    # Listing runs nothing: a discovered evalctl.toml imports no plugin (docs/security.md).
    settings = options.settings_from_env(_paths(paths, cases), code_may_run=False)
    suites = load_suites(
        _paths(paths, cases),
        settings.cases_dir,
        suite_names=suite,
        case_glob=options.case_globs(case),
        case_filter=case_filter(feature, meta),
    )
    listing = CasesListing(
        suites=[
            SuiteRow(
                name=s.name,
                kind=s.table.kind,
                path=str(s.path),
                cases=[
                    CaseRow(
                        key=c.key,
                        features=c.features,
                        metadata=c.metadata,
                        description=c.description,
                    )
                    for c in s.cases
                ],
            )
            for s in suites
        ]
    )
    emit(listing, as_json, _render_listing)


@cases_app.command("validate")
def validate(
    paths: Annotated[list[Path] | None, typer.Argument(help="Suite files or directories.")] = None,
    script: Annotated[
        Path | None,
        typer.Option(
            "--script",
            help="Also check this reply script: each of its case keys must match a case, and "
            "every judge assertion it would answer must have a reply.",
        ),
    ] = None,
    cases: Annotated[list[Path] | None, options.CASES_PATH] = None,
    no_tools_exec: Annotated[bool, options.NO_TOOLS_EXEC] = False,
    allow_outside_paths: Annotated[bool, options.ALLOW_OUTSIDE_PATHS] = False,
    connect: Annotated[
        bool,
        typer.Option(
            "--connect",
            help="Also start (or reach) each [[suite.mcp]] server, list its tools and check "
            "that the tools the suite names exist; a stdio server runs code (refused with "
            "--no-tools-exec).",
        ),
    ] = False,
    as_json: Annotated[bool, options.JSON] = False,
) -> None:
    """Validate suite files strictly: everything `run` would check.

    Files and modules the suites name are checked too. Exit 2 listing every problem (file,
    case id, field) in every file.

    Runs none of the suites' code: a python tool's module is read, never imported. With
    --no-tools-exec, command and python tools are problems too, as `run --no-tools-exec` says.
    Files a suite names must lie inside its project unless --allow-outside-paths is given
    (docs/security.md, "The path rule")."""
    options.path_rule(allow_outside_paths, no_tools_exec)
    # Validating runs nothing: a discovered evalctl.toml imports no plugin (docs/security.md).
    settings = options.settings_from_env(_paths(paths, cases), code_may_run=False)
    files = discover(_paths(paths, cases), settings.cases_dir)
    suites, problems = [], []
    for file in files:
        try:
            suites.append(load_suite(file))
        except SuiteErrors as exc:
            problems.extend(exc.errors)
        except BadInputError as exc:
            problems.append(exc)
    problems.extend(name_clashes(suites))  # as `run` refuses them
    if no_tools_exec:
        problems.extend(tool_exec_refusals(suites, settings.allowed_env))
    if not problems and _paths(paths, cases) is None:
        # A plain `run` runs evalctl.toml's default_suites: each must be among these.
        problems.extend(_unknown_defaults(settings.default_suites, suites, settings.config_file))
    if not problems and connect:
        # The one way validating starts anything: asked for, and never where no code may run
        # (a stdio server was refused above).
        from evalctl.runner.mcp_servers import connect_problems

        problems.extend(connect_problems(suites, os.environ))
    if problems:
        raise problems[0] if len(problems) == 1 else SuiteErrors(problems)
    if script is not None:
        problems = _script_problems(script, suites, settings.judge.provider)
        if problems:
            raise problems[0] if len(problems) == 1 else SuiteErrors(problems)
    report = ValidationReport(
        files=[str(f) for f in files], suites=len(suites), cases=sum(len(s.cases) for s in suites)
    )
    emit(
        report,
        as_json,
        lambda r: stdout.print(
            f"[green]ok[/] {plural(r.cases, 'case')} in {plural(r.suites, 'suite')}"
        ),
    )


def _script_problems(
    path: Path, suites: list[Suite], judge_provider: str | None
) -> list[BadInputError]:
    """What `run --script` would trip over: keys matching no case, judges left unanswered,
    replies that cannot be filled from a case they answer."""
    from evalctl.judge.script_replies import judge_reply_problems
    from evalctl.providers.scripted import load_script, script_key_problem
    from evalctl.runner.script_values import reply_problems, run_case_values

    script = load_script(path)
    keys_problem = script_key_problem(script, path, [c.key for s in suites for c in s.cases])
    return [
        *([keys_problem] if keys_problem is not None else []),
        *judge_reply_problems(script, path, suites, judge_provider),
        *reply_problems(path, run_case_values(suites)),
    ]


def _unknown_defaults(
    defaults: list[str], suites: list[Suite], config_file: Path | None
) -> list[BadInputError]:
    names = sorted(s.name for s in suites)
    return [
        BadInputError(
            f"unknown suite {name!r} (available: {', '.join(names) or 'none'})",
            file=str(config_file) if config_file else None,
            field="default_suites",
        )
        for name in defaults
        if name not in names
    ]


def register(app: typer.Typer) -> None:
    app.add_typer(cases_app, name="cases")
