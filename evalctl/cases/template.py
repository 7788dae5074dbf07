"""Filling a case's `{{ var }}` placeholders: Jinja2, sandboxed and strict.

The sandbox keeps a template to its values (no attribute walks to Python internals, no huge
repetitions); `StrictUndefined` makes a placeholder with no value, such as a `{{ expected }}`
left over from another tool's file, an error rather than text sent to the model. Only
strings holding Jinja markup are rendered: everything else keeps its type. A string that is
one `{{ expression }}` and nothing else is typed: it becomes the expression's value (a
number, a boolean, a list, a table), not its text (`render_value`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evalctl import template_budget
from evalctl.template_budget import MAX_TAGS

if TYPE_CHECKING:
    from jinja2 import Template
    from jinja2.environment import TemplateExpression
    from jinja2.sandbox import SandboxedEnvironment

# (location below the rendered value, message)
Problem = tuple[tuple[int | str, ...], str]

# The longest string or list a `*` or `**` in a template may build: far above any prompt.
MAX_REPEAT = 1_000_000


def _sandbox() -> SandboxedEnvironment:
    """The sandbox, each render held to the template budget of time and size
    (evalctl.cases.sandbox), plus a bound on `"x" * n` and `n ** m`. Jinja2 is imported
    here, on the first placeholder: a suite without any does not pay for it."""
    from jinja2 import StrictUndefined
    from jinja2.exceptions import SecurityError
    from jinja2.runtime import Context

    from evalctl.cases.sandbox import BoundedSandbox

    class Sandbox(BoundedSandbox):
        intercepted_binops = BoundedSandbox.intercepted_binops

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

    env = Sandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
    env.filters["slug"] = slug
    env.filters["fromjson"] = fromjson
    return env


def fromjson(value: Any) -> Any:
    """`{{ filters | fromjson }}`: a text column holding JSON (a CSV cell) read as what it
    holds, a table, a list or a number, for a typed placeholder to hand on."""
    import json

    if not isinstance(value, str):
        return value  # already data: a JSON or TOML row's value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise ValueError(f"fromjson: not JSON: {exc}") from None


# The longest id part `slug` makes.
SLUG_MAX = 48


def slug(value: Any) -> str:
    """`{{ question | slug }}`: lowercase, each run of characters other than ASCII letters
    and digits one `-`, none at either end, at most SLUG_MAX characters (an id from text)."""
    text = re.sub(r"[^a-z0-9]+", "-", str(value).lower()).strip("-")
    return text[:SLUG_MAX].rstrip("-")


def has_markup(text: str) -> bool:
    return "{" in text and ("{{" in text or "{%" in text or "{#" in text)


# A placeholder the plain path fills: `{{ name }}`, spaces allowed, no trim marks.
_PLAIN_PLACEHOLDER = re.compile(r"\{\{[ \t]*([A-Za-z_][A-Za-z0-9_]*)[ \t]*\}\}")
# Names Jinja reads as constants or operators, not as a variable.
_NOT_NAMES = frozenset(
    {"true", "false", "none", "True", "False", "None", "and", "or", "not", "in", "is", "if"}
)


def plain_parts(text: str) -> list[str] | None:
    """`text` split into literal text (even places) and placeholder names (odd places) when
    it is nothing but text and `{{ name }}` placeholders, else None. Such a template, its
    names all text values, renders as the join of its parts: a data file's rows (every CSV
    value is text) are filled without Jinja's per-render cost, the same text either way."""
    parts = _PLAIN_PLACEHOLDER.split(text)
    for literal in parts[0::2]:
        # A `{` could start markup, or change how Jinja reads the placeholder beside it;
        # Jinja turns "\r\n" into "\n".
        if "{" in literal or "\r" in literal:
            return None
    if any(name in _NOT_NAMES for name in parts[1::2]) or len(parts) // 2 > MAX_TAGS:
        return None  # Jinja reads these otherwise, or refuses the template
    return parts


def fill_plain(parts: list[str], variables: Mapping[str, Any]) -> str | None:
    """`plain_parts`' template filled from `variables`, or None when a name's value is not
    text (a number, a missing name: Jinja renders, types or reports those)."""
    out = list(parts)
    for index in range(1, len(parts), 2):
        value = variables.get(parts[index])
        if type(value) is not str:
            return None
        out[index] = value
    if sum(map(len, out)) > template_budget.current().max_chars:
        return None  # past the budget: Jinja's render refuses it, in its words
    return "".join(out)


# A string that is one `{{ expression }}` and nothing else, whitespace around it allowed.
_SINGLE = re.compile(
    r"(?P<lead>\s*)\{\{(?P<trim_l>-?)(?P<expr>.*?)(?P<trim_r>-?)\}\}(?P<trail>\s*)", re.S
)


def single_expression(text: str) -> str | None:
    """The expression of a string that is exactly one `{{ expression }}` (whitespace around
    it allowed), else None: such a string yields the expression's value with its type."""
    match = _SINGLE.fullmatch(text)
    if match is None:
        return None
    expr = match["expr"]
    if any(mark in expr for mark in ("{{", "}}", "{%", "%}", "{#")):
        return None  # two placeholders, or a block: text
    return expr.strip() or None


def render_value(value: Any, variables: Mapping[str, Any]) -> tuple[Any, list[Problem]]:
    """`value` (a string, or a table or list holding strings) with its placeholders filled
    from `variables`, and the problems found: the typed rendering a case's template gets. A
    string that is one `{{ expression }}` and nothing else becomes the expression's value
    with its type (a number, a boolean, a list, a table); mixed text stays text."""
    return _SHARED.render(value, variables)


def _typed(value: Any) -> Any:
    """A template expression's value as data: JSON's types kept (tuples become lists), a
    value of any other type its text, as it would have rendered."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return str(value)  # Markup, a str subclass, becomes plain text
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _typed(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_typed(v) for v in value]
    return str(value)


class Renderer:
    """Renders nested case data; each distinct template string is compiled once, so a
    template shared by thousands of rows costs one compilation."""

    def __init__(self) -> None:
        self._env: SandboxedEnvironment | None = None
        self._compiled: dict[str, Template | str] = {}
        # Templates of plain text and `{{ name }}` only, split (`plain_parts`); None: others.
        self._plain: dict[str, list[str] | None] = {}
        # One `{{ expression }}` strings' expressions; None: not an expression Jinja compiles.
        self._expressions: dict[str, TemplateExpression | None] = {}

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
            if not has_markup(value):
                return value
            if value not in self._plain:
                self._plain[value] = plain_parts(value)
            parts = self._plain[value]
            filled = fill_plain(parts, variables) if parts is not None else None
            if filled is not None:
                return filled
            if value in self._expressions or single_expression(value) is not None:
                return self._expression(value, variables, loc, problems)
            return self._string(value, variables, loc, problems)
        if isinstance(value, dict):
            return {k: self._walk(v, variables, (*loc, k), problems) for k, v in value.items()}
        if isinstance(value, list):
            return [self._walk(v, variables, (*loc, i), problems) for i, v in enumerate(value)]
        return value

    def _expression(
        self,
        text: str,
        variables: Mapping[str, Any],
        loc: tuple[int | str, ...],
        problems: list[Problem],
    ) -> Any:
        """A string that is one `{{ expression }}`: the expression's value with its type. A
        text value keeps the whitespace around the placeholder, as rendering would."""
        from jinja2 import TemplateSyntaxError
        from jinja2.runtime import Undefined

        if self._env is None:
            self._env = _sandbox()
        match = _SINGLE.fullmatch(text)
        assert match is not None  # single_expression said so
        if text not in self._expressions:
            try:
                expr = match["expr"].strip()
                self._expressions[text] = self._env.compile_expression(
                    expr, undefined_to_none=False
                )
            except TemplateSyntaxError:
                self._expressions[text] = None  # rendered as text, which reports it
        compiled = self._expressions[text]
        if compiled is None:
            return self._string(text, variables, loc, problems)
        try:
            value = compiled(dict(variables))
            if isinstance(value, Undefined):
                str(value)  # StrictUndefined raises, naming the placeholder
            if isinstance(value, str):
                lead = "" if match["trim_l"] else match["lead"]
                trail = "" if match["trim_r"] else match["trail"]
                return f"{lead}{value}{trail}"
            return _typed(value)
        except Exception as exc:  # a template is user code: its failure is their input's
            problems.append((loc, _failure(exc, variables)))
        return text

    def _string(
        self,
        text: str,
        variables: Mapping[str, Any],
        loc: tuple[int | str, ...],
        problems: list[Problem],
    ) -> str:
        from jinja2 import TemplateSyntaxError

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
        except Exception as exc:  # a template is user code: its failure is their input's
            problems.append((loc, _failure(exc, variables)))
        return text


def _failure(exc: Exception, variables: Mapping[str, Any]) -> str:
    """What a failed render says: a missing placeholder names the values the row has."""
    from jinja2 import UndefinedError
    from jinja2.exceptions import SecurityError

    if isinstance(exc, UndefinedError):
        names = ", ".join(sorted(k for k in variables if k != "vars")) or "none"
        return f"{exc}: a placeholder with no value (vars: {names})"
    if isinstance(exc, SecurityError):
        return f"not allowed in a template: {exc}"
    return f"template failed: {type(exc).__name__}: {exc}"


# The renderer `render_value` shares: each distinct template string compiled once.
_SHARED = Renderer()
