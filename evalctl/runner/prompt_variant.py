"""A matrix's prompt variant: a template over each case's prompt (`{{ prompt }}`) and its
values (a data-file row's columns, `vars[...]`, `case.id`), as a case template is.

The variant is applied to the conversation a case opens with, so the transcript records the
prompt as sent; the last user message of that opening is the case's prompt (a kind may open
with earlier turns, which stay as they are). A variant's text may come from a file
(`{ file = "prompts.txt" }`, relative to evalctl.toml).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from evalctl import userfiles, userpaths
from evalctl.cases.loader import load_all, select
from evalctl.cases.schema import Case, Suite
from evalctl.cases.select import CaseFilter
from evalctl.cases.template import Renderer
from evalctl.chat import Message, Role
from evalctl.config import PromptFile, Settings
from evalctl.errors import BadInputError
from evalctl.plugin_loader import configure as configure_plugins
from evalctl.runner.script_values import case_values


class CaseSelection(Protocol):
    """What of a run's request selects its cases (`RunRequest` has it): described here, not
    imported, because the request's module imports the runner's, this one among them."""

    @property
    def paths(self) -> list[Path] | None: ...
    @property
    def suites(self) -> list[str]: ...
    @property
    def case_glob(self) -> str | None: ...
    @property
    def limit(self) -> int | None: ...
    @property
    def features(self) -> list[str]: ...
    @property
    def meta(self) -> dict[str, str]: ...


def template_problem(template: str) -> str | None:
    """Why `template` cannot be a prompt variant, or None: a syntax error, or no
    placeholder at all (the case would never be asked). Which values it names is checked
    against the run's cases (`variant_problems`)."""
    from jinja2 import Environment, TemplateSyntaxError, meta

    try:
        parsed = Environment().parse(template)
    except TemplateSyntaxError as exc:
        return f"template syntax error: {exc.message} (line {exc.lineno})"
    if not meta.find_undeclared_variables(parsed):
        return (
            "the template never includes the case's prompt: add {{ prompt }} "
            "(or a value of the case, such as a data-file column)"
        )
    return None


def variant_values(case: Case, prompt: str) -> dict[str, Any]:
    """What a variant may name: the case's values (evalctl.runner.script_values) and
    `prompt`, the case's own prompt (it wins over a column of that name)."""
    return {**case_values(case), "prompt": prompt}


def wrap_prompt(
    messages: list[Message], template: str | None, values: Mapping[str, Any] | None = None
) -> list[Message]:
    """`messages` with the last user message rendered into `template` (None: unchanged),
    over `values` (the case's; `prompt` is that message)."""
    if template is None:
        return messages
    last = max((i for i, m in enumerate(messages) if m.role is Role.USER), default=None)
    if last is None:
        return messages
    named = {**(values or {}), "prompt": messages[last].content}
    rendered, _ = Renderer().render(template, named)
    wrapped = messages[last].model_copy(update={"content": str(rendered)})
    return [*messages[:last], wrapped, *messages[last + 1 :]]


def variant_problems(template: str, suites: list[Suite]) -> list[tuple[str, str]]:
    """(case key, message) for each case of `suites` the variant cannot be filled for (a
    value no case has), the first per distinct message."""
    renderer = Renderer()
    found: list[tuple[str, str]] = []
    said: set[str] = set()
    for suite in suites:
        for case in suite.cases:
            # The prompt's own text does not matter here, only the names the variant uses.
            _, problems = renderer.render(template, variant_values(case, ""))
            for _, message in problems:
                if message not in said:
                    said.add(message)
                    found.append((case.key, message))
    return found


def variant_templates(
    prompts: Mapping[str, str | PromptFile], base: Path, *, file: str | None, field: str
) -> dict[str, str]:
    """Each variant's template: given inline, or read from its file (relative to `base`,
    the directory of evalctl.toml); its last line break is not part of it."""
    out: dict[str, str] = {}
    for name, given in prompts.items():
        if isinstance(given, str):
            out[name] = given
            continue
        # The path rule (evalctl.userpaths): evalctl.toml may come from a pull request too.
        path = userpaths.inside_project(
            given.file, base, file=file or base, field=f"{field}.{name}.file"
        )
        try:
            text = userfiles.read_text(path, what="prompt file")
        except BadInputError as exc:
            raise BadInputError(
                f"prompt variant {name!r}: {path}: {exc.detail}", file=file, field=f"{field}.{name}"
            ) from None
        out[name] = text.removesuffix("\n").removesuffix("\r")
    return out


def check_variants(
    variants: Mapping[str, str],
    request: CaseSelection,
    settings: Settings,
    *,
    file: str | None,
) -> None:
    """Refuse, before any cell runs, a variant naming a value some selected case lacks
    (exit 2 naming `matrix.prompts.<name>`, the case and the value): the cases are loaded
    and selected as the run will."""
    if not variants:
        return
    configure_plugins(settings)
    narrowed_to = request.suites or ([] if request.paths else settings.default_suites)
    suites = select(
        load_all(request.paths, settings.cases_dir),
        suite_names=narrowed_to,
        case_glob=request.case_glob,
        case_filter=CaseFilter(features=tuple(request.features), meta=request.meta),
        limit=request.limit,
    )
    for name, template in variants.items():
        for key, message in variant_problems(template, suites):
            raise BadInputError(
                f"prompt variant {name!r}, for case {key}: {message}",
                file=file,
                field=f"matrix.prompts.{name}",
            )
