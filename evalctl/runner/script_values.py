"""What a reply script's templates see: each case's values, and the renderer that fills them.

A reply's `content` and the string values of its tool calls' arguments are templates over
its case, like the case's own template over its row: each var by name (`{{ answer }}`, or
`vars["a column"]`), `id`, and `case` (`{{ case.id }}`, `{{ case.input.prompt }}`,
`case.vars`, `case.metadata`). So one `[[default]]` reply answers every row of a data file.
A whole `{{ x }}` keeps its value's type, as in a case template.

The scripted provider sits below the cases' renderer, so the runner hands both in through
`ProviderOptions.case_values`. `reply_problems` finds, before the first case runs, every
reply that cannot be filled for a case it answers (exit 2 naming script, case and field).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalctl.cases.schema import Case, Suite
from evalctl.cases.template import Renderer
from evalctl.errors import BadInputError
from evalctl.providers.options import CaseValues
from evalctl.providers.scripted import fill_reply, load_script, replies_for


def case_values(case: Case) -> dict[str, Any]:
    """What a template over `case` may name: its vars (a row's columns) by name and as
    `vars`, its `id`, and `case` (a column named `case` is still `vars["case"]`)."""
    variables = dict(case.vars)
    return {
        "vars": variables,
        **variables,
        "id": case.id,
        "case": {
            "id": case.id,
            "key": case.key,
            "suite": case.suite,
            "description": case.description,
            "input": case.input.model_dump(mode="json"),
            "expected": case.expected.model_dump(mode="json"),
            "vars": variables,
            "metadata": dict(case.metadata),
            "features": list(case.features),
        },
    }


class _Render:
    """One renderer for the run (it compiles each distinct template once)."""

    def __init__(self) -> None:
        self._renderer = Renderer()

    def __call__(self, value: Any, values: Mapping[str, Any]) -> tuple[Any, list[str]]:
        out, problems = self._renderer.render(value, values)
        return out, [message for _, message in problems]


def run_case_values(suites: list[Suite]) -> CaseValues:
    """The values of every case of `suites`, by key, with the run's renderer."""
    return CaseValues(
        by_key={case.key: case_values(case) for suite in suites for case in suite.cases},
        render=_Render(),
    )


def reply_problems(script_path: Path, values: CaseValues) -> list[BadInputError]:
    """One error per reply of the script that cannot be filled for a case it answers (a
    placeholder with no value, a syntax error), naming the case and the reply's field."""
    script = load_script(script_path)
    errors: list[BadInputError] = []
    said: set[tuple[str, str]] = set()
    for key, case in values.by_key.items():
        for turn, reply in enumerate(replies_for(script, key), start=1):
            _, problems = fill_reply(reply, case, values.render)
            for field, message in problems:
                # A `default` reply fails the same way for every row: said once.
                if (field, message) in said:
                    continue
                said.add((field, message))
                errors.append(
                    BadInputError(
                        f"reply {turn}: {message}",
                        file=str(script_path),
                        case_id=key,
                        field=field,
                    )
                )
    return errors
