"""Filling a case's `{{ var }}` placeholders: Jinja2, sandboxed and strict.

The sandbox keeps a template to its values (no attribute walks to Python internals, no huge
repetitions); `StrictUndefined` makes a placeholder with no value, such as a `{{ expected }}`
left over from another tool's file, an error rather than text sent to the model. Only
strings holding Jinja markup are rendered: everything else keeps its type.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jinja2 import Template
    from jinja2.sandbox import SandboxedEnvironment

# (location below the rendered value, message)
Problem = tuple[tuple[int | str, ...], str]

# The longest string or list a `*` or `**` in a template may build: far above any prompt.
MAX_REPEAT = 1_000_000


def _sandbox() -> SandboxedEnvironment:
    """The stock sandbox, plus a bound on `"x" * n` and `n ** m`, its one way to make a
    template hang or exhaust memory with a single expression. Jinja2 is imported here, on
    the first placeholder: a suite without any does not pay for it."""
    from jinja2 import StrictUndefined
    from jinja2.exceptions import SecurityError
    from jinja2.runtime import Context
    from jinja2.sandbox import SandboxedEnvironment

    class Sandbox(SandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
            if operator == "**" and isinstance(right, int) and abs(right) > 1000:
                raise SecurityError(f"exponent {right} is too large")
            if operator == "*":
                for seq, count in ((left, right), (right, left)):
                    if (
                        isinstance(seq, str | list | tuple)
                        and isinstance(count, int)
                        and len(seq) * count > MAX_REPEAT
                    ):
                        raise SecurityError(f"repetition longer than {MAX_REPEAT:,}")
            return super().call_binop(context, operator, left, right)

    return Sandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)


def has_markup(text: str) -> bool:
    return "{" in text and ("{{" in text or "{%" in text or "{#" in text)


class Renderer:
    """Renders nested case data; each distinct template string is compiled once, so a
    template shared by thousands of rows costs one compilation."""

    def __init__(self) -> None:
        self._env: SandboxedEnvironment | None = None
        self._compiled: dict[str, Template | str] = {}

    def render(self, value: Any, variables: Mapping[str, Any]) -> tuple[Any, list[Problem]]:
        """`value` with every placeholder filled from `variables`, and the problems found
        (located below `value`: `("input", "prompt")`). Containers are always copied, so
        one template can feed many cases."""
        problems: list[Problem] = []
        out = self._walk(value, variables, (), problems)
        return out, problems

    def _walk(
        self,
        value: Any,
        variables: Mapping[str, Any],
        loc: tuple[int | str, ...],
        problems: list[Problem],
    ) -> Any:
        if isinstance(value, str):
            return self._string(value, variables, loc, problems) if has_markup(value) else value
        if isinstance(value, dict):
            return {k: self._walk(v, variables, (*loc, k), problems) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk(v, variables, (*loc, i), problems) for i, v in enumerate(value)]
        return value

    def _string(
        self,
        text: str,
        variables: Mapping[str, Any],
        loc: tuple[int | str, ...],
        problems: list[Problem],
    ) -> str:
        from jinja2 import TemplateSyntaxError, UndefinedError
        from jinja2.exceptions import SecurityError

        if self._env is None:
            self._env = _sandbox()
        template = self._compiled.get(text)
        if template is None:
            try:
                template = self._env.from_string(text)
            except TemplateSyntaxError as exc:
                # Remembered as the message, so each row does not compile it again.
                template = f"template syntax error: {exc.message} (line {exc.lineno})"
            self._compiled[text] = template
        if isinstance(template, str):
            problems.append((loc, template))
            return text
        try:
            return template.render(variables)
        except UndefinedError as exc:
            names = ", ".join(sorted(k for k in variables if k != "vars")) or "none"
            problems.append((loc, f"{exc}: a placeholder with no value (vars: {names})"))
        except SecurityError as exc:
            problems.append((loc, f"not allowed in a template: {exc}"))
        except Exception as exc:  # a template is user code: its failure is their input's
            problems.append((loc, f"template failed: {type(exc).__name__}: {exc}"))
        return text
