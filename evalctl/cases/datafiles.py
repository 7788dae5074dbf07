"""A suite's cases as `[[case]]` tables: its data-file rows through `[suite.case_template]`,
its inline cases, and `[suite.defaults]` under both.

Everything here works on plain tables, before any case is validated, so the loader checks a
case from a row exactly as one written inline, and its errors name the row it came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalctl import userfiles, userpaths
from evalctl.cases.schema import SuiteTable
from evalctl.cases.template import Renderer
from evalctl.errors import BadInputError

# (location, message): the location as the user wrote it, e.g. ("suite", "case_template", ...)
Problem = tuple[tuple[int | str, ...], str]

# The case settings `[suite.defaults]` may give; a case (or the template) setting one wins.
_DEFAULT_SETTINGS = ("threshold", "checks", "timeout_s", "features", "temperature", "top_p", "seed")
# Keys of a case that are data, never templates.
_NOT_RENDERED = frozenset({"id", "vars"})


@dataclass
class RawCase:
    """One case as a `[[case]]` table, where it came from, and what filling it in found."""

    data: dict[str, Any]
    # The case's label in errors: its id, or `#n` for an inline case without one.
    label: str
    # `cases/data/tickets.csv line 4` for a row; None for an inline [[case]].
    origin: str | None = None
    # Assertions the case gets beside its own, filled in for it, each list with the field
    # it came from (`suite.defaults.assert`); the loader drops those whose check name the
    # case's own assertions use.
    shared_assertions: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # What its placeholders may name (`_context`), for the prompt file read after it is built.
    context: dict[str, Any] = field(default_factory=dict)
    # Where its `prompt_file` was written, for errors.
    prompt_where: tuple[int | str, ...] = ("suite", "case_template", "prompt_file")


def expand_cases(
    table: SuiteTable, inline: list[Any], suite_dir: Path, suite_file: Path | None = None
) -> tuple[list[RawCase], list[BadInputError]]:
    """Every case of the suite, inline ones first, then each data file's rows in order; and
    the problems with the data files themselves (unreadable, no ids)."""
    renderer = Renderer()
    template = (
        {
            **table.case_template.model_dump(exclude_unset=True, by_alias=True),
            **table.case_template.placeholders,  # typed: a row's value fills the key
        }
        if table.case_template is not None
        else None
    )
    defaults = (
        table.defaults.model_dump(exclude_unset=True, by_alias=True)
        if table.defaults is not None
        else {}
    )
    cases = [_inline_case(renderer, raw, index, template) for index, raw in enumerate(inline)]
    errors: list[BadInputError] = []
    for name in table.data_files:
        try:
            # The path rule (evalctl.userpaths): a data file lies inside the suite's project.
            path = userpaths.inside_project(
                name, suite_dir, file=suite_file or suite_dir, field="suite.cases_from"
            )
        except BadInputError as exc:
            errors.append(exc)
            continue
        try:
            records = userfiles.read_records(path)
        except BadInputError as exc:
            errors.append(BadInputError(f"{exc.detail} (named in suite.cases_from)", file=exc.file))
            continue
        if records and table.id_template is None and "id" not in records[0].values:
            errors.append(
                BadInputError(
                    "the rows have no `id` column and the suite sets no id_template: give "
                    "each row a stable id (baselines match cases by id)",
                    file=str(path),
                )
            )
            continue
        for number, record in enumerate(records, start=1):
            cases.append(_row_case(renderer, table, record, path, template or {}, number))
    texts: dict[Path, str] = {}
    for case in cases:
        if isinstance(case.data, dict):
            _fill_prompt(renderer, case, table.prompt_file, suite_dir, texts)
            _apply_defaults(renderer, case, defaults)
    return cases, errors


def _fill_prompt(
    renderer: Renderer,
    case: RawCase,
    suite_prompt: str | None,
    suite_dir: Path,
    texts: dict[Path, str],
) -> None:
    """A case's `prompt_file` (its own or its template's, the path already filled in), else
    the suite's for a case with no input: the file's text, filled from the case's values, as
    its `input.prompt`. `texts`: each file read once per suite."""
    data = case.data
    name = data.pop("prompt_file", None)
    where = case.prompt_where
    if name is None:
        if suite_prompt is None or "input" in data:
            return
        name, where = suite_prompt, ("suite", "prompt_file")
    elif isinstance(data.get("input"), dict) and (
        "prompt" in data["input"] or "messages" in data["input"]
    ):
        case.problems.append(
            (where, "give the prompt once: input.prompt (or messages), or prompt_file")
        )
        return
    if not isinstance(name, str) or not name.strip():
        case.problems.append((where, "must be a file's path, relative to the suite file"))
        return
    try:
        # The path rule (evalctl.userpaths), on the name as the row filled it in: a row
        # cannot build a path out of the project.
        path = userpaths.inside_project(
            name, suite_dir, file=suite_dir, field=".".join(str(part) for part in where)
        )
    except BadInputError as exc:
        case.problems.append((where, exc.detail))
        return
    if path not in texts:
        try:
            # The line break an editor ends the file with is not part of the prompt.
            text = userfiles.read_text(path, what="prompt file")
            texts[path] = text.removesuffix("\n").removesuffix("\r")
        except BadInputError as exc:
            case.problems.append((where, f"{path}: {exc.detail}"))
            return
    prompt = _render(renderer, texts[path], case.context, where, case.problems)
    given = data.get("input")
    data["input"] = {**(given if isinstance(given, dict) else {}), "prompt": str(prompt)}


def _inline_case(
    renderer: Renderer, raw: Any, index: int, template: dict[str, Any] | None
) -> RawCase:
    label = raw.get("id") if isinstance(raw, dict) else None
    case = RawCase(raw, label if isinstance(label, str) else f"#{index + 1}")
    if not isinstance(raw, dict):
        return case  # the loader reports a case that is not a table
    variables = raw.get("vars", {})
    if not isinstance(variables, dict):
        return case  # CaseEntry says what `vars` must be
    data = dict(raw)
    context = _context(variables, data.get("id"))
    # A case that sets vars is a row written inline: the template fills what it leaves out,
    # and its assertions join the case's own as the defaults do.
    if variables and template:
        for key, value in template.items():
            if key == "assert" and "assert" in data:
                loc = ("suite", "case_template", "assert")
                rendered = _render(renderer, value, context, loc, case.problems)
                case.shared_assertions.append(("suite.case_template.assert", list(rendered)))
            elif key not in data:
                data[key] = value
    for key, value in data.items():
        if key in _NOT_RENDERED:
            continue
        where: tuple[int | str, ...] = (
            ("case", key) if key in raw else ("suite", "case_template", key)
        )
        data[key] = _render(renderer, value, context, where, case.problems)
    case.data = data
    case.context = context
    if "prompt_file" in raw:
        case.prompt_where = ("case", "prompt_file")
    return case


def _row_case(
    renderer: Renderer,
    table: SuiteTable,
    record: userfiles.Record,
    path: Path,
    template: Any,
    row_number: int,
) -> RawCase:
    """The case of one row; `row_number`: its place in its file, from 1."""
    variables = dict(record.values)
    origin = f"{path} {record.where}"
    problems: list[Problem] = []
    if "id" in variables:
        case_id = variables.pop("id")
    else:
        assert table.id_template is not None  # expand_cases refused the file otherwise
        # The row's values as the case template sees them (`vars["a column"]` too), and
        # `row_number`; there is no `id` yet.
        named = {"row_number": row_number, **_context(variables, None)}
        del named["id"]
        case_id = _render(renderer, table.id_template, named, ("suite", "id_template"), problems)
    # A JSON or TOML row may number its cases (`"{{ number }}"` is that number); the id is
    # text either way.
    if isinstance(case_id, int) and not isinstance(case_id, bool):
        case_id = str(case_id)
    data: dict[str, Any] = {"id": case_id, "vars": variables}
    context = {"row_number": row_number, **_context(variables, case_id)}
    for key, value in template.items():
        data[key] = _render(renderer, value, context, ("suite", "case_template", key), problems)
    label = case_id if isinstance(case_id, str) else record.where
    return RawCase(data, label, origin, problems=problems, context=context)


def _apply_defaults(renderer: Renderer, case: RawCase, defaults: dict[str, Any]) -> None:
    for key in _DEFAULT_SETTINGS:
        if key in defaults and key not in case.data:
            case.data[key] = defaults[key]
    if "assert" in defaults:
        variables = case.data.get("vars", {})
        context = _context(variables if isinstance(variables, dict) else {}, case.data.get("id"))
        rendered = _render(
            renderer, defaults["assert"], context, ("suite", "defaults", "assert"), case.problems
        )
        case.shared_assertions.append(("suite.defaults.assert", list(rendered)))


def _context(variables: dict[str, Any], case_id: Any) -> dict[str, Any]:
    """What a placeholder may name: each var, `vars` (for a column whose name is not a
    Python name, `vars["ticket text"]`; a column named `vars` wins) and the case's `id`."""
    return {"vars": variables, **variables, "id": case_id}


def _render(
    renderer: Renderer,
    value: Any,
    context: dict[str, Any],
    where: tuple[int | str, ...],
    problems: list[Problem],
) -> Any:
    out, found = renderer.render(value, context)
    problems.extend(((*where, *loc), message) for loc, message in found)
    return out
