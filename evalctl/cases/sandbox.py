"""The sandbox templates render in: Jinja2's, held to a budget of time and size.

Jinja2's SandboxedEnvironment keeps a template away from Python's internals; it does not keep
it from running for hours or building a string of gigabytes (nested `range` loops,
`lipsum(1000000)`, `"x" | center(10**9)`, `'%9999999999s'`, a `replace` or `join` that
explodes, a loop doubling a string). `BoundedSandbox` holds each render to the budget of
evalctl.template_budget (`template_time_s`, `template_max_chars` in evalctl.toml):

- time: a deadline, checked at every loop step, call, filter, operator and output;
- size: the text one render outputs (what `set` and `filter` blocks and macros capture
  included), and what any one operation builds (`*`, `+`, `~`, `%`, `format`, `join`,
  `replace`, `center`, `indent`, `batch`, ... and the widths they are given), stay within
  `max_chars`: checked before the operation where its size can be known, after it where not
  (then it built at most a few times the cap);
- `lipsum` is refused; `range` keeps the sandbox's 100,000 items.

Past the budget is a `TemplateBudgetError`, a `SecurityError`: the renderer reports it as the
template's problem, so `validate` and `run` exit 2 naming file, case and field. Loops,
outputs and `~` reach the budget through calls the template's syntax tree is given before it
is compiled (`_generate`), to attributes of the environment a template cannot name.
"""

from __future__ import annotations

import functools
import re
import string
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, NoReturn

from jinja2 import nodes
from jinja2.environment import Template, TemplateExpression
from jinja2.exceptions import SecurityError, TemplateSyntaxError
from jinja2.runtime import Context
from jinja2.sandbox import SandboxedEnvironment
from jinja2.visitor import NodeTransformer

from evalctl import template_budget

# The most bits an integer a template computes may have: far past the 4,300 digits Python
# prints, far below a multiplication or power that runs for minutes.
MAX_INT_BITS = 100_000

# What one template may hold: evalctl.template_budget.MAX_TAGS and its neighbours.
MAX_TAGS = template_budget.MAX_TAGS
MAX_MARKUP_CHARS = template_budget.MAX_MARKUP_CHARS
MAX_NODES = template_budget.MAX_NODES
_MARKUP = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)


class TemplateBudgetError(SecurityError):
    """A render past its budget of time or size."""


def _cap() -> int:
    return template_budget.current().max_chars


def _too_big(what: str, size: int) -> NoReturn:
    raise TemplateBudgetError(
        f"{what} would make {size:,} characters (or items), more than the {_cap():,} a "
        "template may (template_max_chars in evalctl.toml)"
    )


def _check_size(what: str, size: int) -> None:
    if size > _cap():
        _too_big(what, size)


def _sized(what: str, value: Any) -> Any:
    """`value`, if it is within the cap (a string, list, table or set)."""
    if isinstance(value, str | bytes | list | tuple | dict | set | frozenset):
        _check_size(what, len(value))
    return value


def _check_width(what: str, width: Any) -> None:
    if isinstance(width, int) and not isinstance(width, bool):
        _check_size(what, abs(width))


def _text_length(value: Any) -> int:
    """About how many characters `value` makes as text (`str`, JSON), counted without
    making it: a list holding a million-character string a thousand times is a billion
    characters, found before `str()` builds them. Counting stops past the cap."""
    if isinstance(value, str):
        return len(value)
    cap = _cap()
    total = 0
    stack = [value]
    while stack and total <= cap:
        item = stack.pop()
        if isinstance(item, str | bytes):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 2 + 4 * len(item)
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            total += 2 + 2 * len(item)
            stack.extend(item)
        elif isinstance(item, bool | float | None):
            total += 24
        elif isinstance(item, int):
            total += item.bit_length() // 3 + 2
        else:
            total += len(str(item))
    return total


def _digits_width(what: str, digits: str) -> int:
    """A width written in a format string, checked before Python reads it as a number."""
    if len(digits) > len(str(_cap())) or int(digits) > _cap():
        raise TemplateBudgetError(
            f"{what} with a width of {digits[:20]}{'...' if len(digits) > 20 else ''}, "
            f"more than the {_cap():,} characters a template may (template_max_chars in "
            "evalctl.toml)"
        )
    return int(digits)


# A `%` conversion: `%s`, `%(name)-10.3f`, `%*d`.
_PERCENT = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?([A-Za-z%])")


def check_percent(fmt: str, values: Any) -> None:
    """`fmt % values` stays within the cap: each width and precision, and the whole."""
    items = (
        list(values.values())
        if isinstance(values, Mapping)
        else list(values)
        if isinstance(values, tuple)
        else [values]
    )
    longest = max((_text_length(v) for v in items), default=0)
    stars = [abs(v) for v in items if isinstance(v, int) and not isinstance(v, bool)]
    total = len(fmt)
    for width, precision, _conversion in _PERCENT.findall(fmt):
        widest = 0
        for number in (width, precision):
            if number == "*":
                widest = max([widest, *stars])
            elif number:
                widest = max(widest, _digits_width("a `%` format", number))
        total += max(widest, longest)
    _check_size("a `%` format", total)


def check_format(fmt: str, args: Iterable[Any], kwargs: Mapping[str, Any]) -> None:
    """`fmt.format(*args, **kwargs)` stays within the cap: each width, and the whole."""
    values = [*args, *kwargs.values()]
    longest = max((_text_length(v) for v in values), default=0)
    numbers = [abs(v) for v in values if isinstance(v, int) and not isinstance(v, bool)]
    total = len(fmt)
    for _literal, field, spec, _conversion in string.Formatter().parse(fmt):
        if field is None:
            continue
        widest = 0
        if spec:
            if "{" in spec:  # a width given as an argument: `{:{}}`
                widest = max([0, *numbers])
            for digits in re.findall(r"\d+", spec):
                widest = max(widest, _digits_width("a format", digits))
        total += max(widest, longest)
    _check_size("a format", total)


def _replaced_size(text: str, old: Any, new: Any, count: Any) -> int:
    if not isinstance(old, str) or not isinstance(new, str):
        return len(text)
    times = (text.count(old) if old else len(text) + 1) if isinstance(text, str) else 0
    if isinstance(count, int) and count >= 0:
        times = min(times, count)
    return len(text) + times * max(0, len(new) - len(old))


def _no_lipsum(*_args: Any, **_kwargs: Any) -> NoReturn:
    raise SecurityError("lipsum is not available in a template")


def _too_large(what: str, limit: int) -> TemplateSyntaxError:
    return TemplateSyntaxError(
        f"{what}, more than the {limit:,} a template may hold (its compiling is bounded too)", 1
    )


def _too_deep(exc: BaseException) -> TemplateSyntaxError:
    return TemplateSyntaxError(f"nested too deeply to compile ({type(exc).__name__})", 1)


class _Render(threading.local):
    """One thread's render in progress: its deadline (None: no render) and output so far."""

    deadline: float | None = None
    output: int = 0


def _hook(name: str, *args: nodes.Node, lineno: int) -> nodes.Call:
    call = nodes.Call(nodes.EnvironmentAttribute(name), list(args), [], None, None)
    call.set_lineno(lineno)
    return call


class _Hooks(NodeTransformer):
    """The budget's calls, put into a template's syntax tree before it is compiled: each
    loop's iterable, each output and each `~` go through the environment."""

    def visit_For(self, node: nodes.For) -> nodes.Node:
        self.generic_visit(node)  # in place
        node.iter = _hook("evalctl_loop", node.iter, lineno=node.lineno)
        return node

    def visit_Output(self, node: nodes.Output) -> nodes.Node:
        self.generic_visit(node)  # in place
        node.nodes = [_hook("evalctl_out", child, lineno=node.lineno) for child in node.nodes]
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:
        self.generic_visit(node)  # in place
        return _hook("evalctl_concat", *node.nodes, lineno=node.lineno)


class BoundedSandbox(SandboxedEnvironment):
    """The sandbox, each render held to the template budget (see the module's docstring)."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._render = _Render()
        self.globals["lipsum"] = _no_lipsum

    # -- the budget ----------------------------------------------------------------------

    @contextmanager
    def budget(self) -> Iterator[None]:
        """One render's budget: a deadline from now and no output yet (nested: the outer's)."""
        state = self._render
        if state.deadline is not None:
            yield
            return
        state.deadline = time.monotonic() + template_budget.current().time_s
        state.output = 0
        try:
            yield
        finally:
            state.deadline = None

    def tick(self) -> None:
        deadline = self._render.deadline
        if deadline is not None and time.monotonic() > deadline:
            raise TemplateBudgetError(
                f"rendering it ran past its {template_budget.current().time_s:g} s budget "
                "(template_time_s in evalctl.toml)"
            )

    # -- the hooks the syntax tree is given (_Hooks) ---------------------------------------

    def evalctl_loop(self, iterable: Any) -> Iterator[Any]:
        for item in iterable:
            self.tick()
            yield item

    def evalctl_out(self, value: Any) -> Any:
        state = self._render
        state.output += _text_length(value)
        if state.output > _cap():
            raise TemplateBudgetError(
                f"its output passed {_cap():,} characters, the most a template may make "
                "(template_max_chars in evalctl.toml)"
            )
        return value

    def evalctl_concat(self, *parts: Any) -> str:
        _check_size("`~`", sum(_text_length(part) for part in parts))
        return "".join([str(part) for part in parts])

    def compile_expression(self, source: str, undefined_to_none: bool = True) -> TemplateExpression:
        if len(source) > MAX_MARKUP_CHARS:
            raise _too_large(f"{len(source):,} characters of expression", MAX_MARKUP_CHARS)
        try:
            expression = super().compile_expression(source, undefined_to_none)
        except (RecursionError, SyntaxError, MemoryError) as exc:
            raise _too_deep(exc) from None
        return BoundedExpression(expression._template, expression._undefined_to_none)

    def compile(self, *args: Any, **kwargs: Any) -> Any:
        """Jinja2's compile; nesting too deep for its parser or for Python (a RecursionError,
        "too many levels of indentation") is the template's syntax error, not evalctl's."""
        try:
            return super().compile(*args, **kwargs)
        except (RecursionError, SyntaxError, MemoryError) as exc:
            raise _too_deep(exc) from None

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tags = source.count("{{") + source.count("{%")
        if tags > MAX_TAGS:
            raise _too_large(f"{tags:,} placeholders and tags", MAX_TAGS)
        markup = sum(match.end() - match.start() for match in _MARKUP.finditer(source))
        if markup > MAX_MARKUP_CHARS:
            raise _too_large(f"{markup:,} characters of placeholders and tags", MAX_MARKUP_CHARS)
        return super()._parse(source, name, filename)

    def _generate(
        self,
        source: nodes.Template,
        name: str | None,
        filename: str | None,
        defer_init: bool = False,
    ) -> str:
        self._guard_filters()
        size = sum(1 for _ in source.find_all(nodes.Node))
        if size > MAX_NODES:
            raise _too_large(f"{size:,} syntax-tree nodes", MAX_NODES)
        tree = _Hooks().visit(source)
        tree.set_environment(self)
        return super()._generate(tree, name, filename, defer_init=defer_init)

    # -- calls, operators, filters, formats -----------------------------------------------

    def call(self, context: Context, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        self.tick()
        owner = getattr(obj, "__self__", None)
        if isinstance(owner, str):
            args = _check_str_method(owner, getattr(obj, "__name__", ""), args, kwargs)
        result = super().call(context, obj, *args, **kwargs)
        if isinstance(owner, list | dict | set):
            _sized("a list or table it grew", owner)
        return _sized("a call", result)

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        self.tick()
        ints = all(isinstance(v, int) and not isinstance(v, bool) for v in (left, right))
        if operator == "+" and not ints and hasattr(left, "__len__") and hasattr(right, "__len__"):
            _check_size("`+`", len(left) + len(right))
        elif operator == "*" and ints and left.bit_length() + right.bit_length() > MAX_INT_BITS:
            raise TemplateBudgetError(f"a product of more than {MAX_INT_BITS:,} bits")
        elif operator == "*":
            for seq, count in ((left, right), (right, left)):
                if isinstance(seq, str | list | tuple) and isinstance(count, int):
                    _check_size("`*`", len(seq) * count)
        elif operator == "**" and ints and right > 0 and left.bit_length() * right > MAX_INT_BITS:
            raise TemplateBudgetError(f"a power of more than {MAX_INT_BITS:,} bits")
        elif operator == "%" and isinstance(left, str):
            check_percent(left, right)
        return _sized(f"`{operator}`", super().call_binop(context, operator, left, right))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        fmt: str = value.__self__
        is_map = value.__name__ == "format_map"

        def guarded(*args: Any, **kwargs: Any) -> str:
            self.tick()
            if is_map and len(args) == 1 and isinstance(args[0], Mapping):
                check_format(fmt, (), args[0])
            else:
                check_format(fmt, args, kwargs)
            return str(_sized("a format", wrapped(*args, **kwargs)))

        return guarded

    def _guard_filters(self) -> None:
        """Every filter (added ones too) held to the budget, before a template compiles."""
        for name, func in list(self.filters.items()):
            if not getattr(func, "evalctl_guarded", False):
                self.filters[name] = self._guarded(name, func)

    def _guarded(self, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        # A filter Jinja passes its context, eval context or environment to first.
        offset = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0

        @functools.wraps(func)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            self.tick()
            args = _check_filter(name, offset, args, kwargs)
            if name == "sum":
                return _sized("the sum filter", _linear_sum(func, offset, args, kwargs))
            return _sized(f"the {name} filter", func(*args, **kwargs))

        guarded.evalctl_guarded = True  # type: ignore[attr-defined]
        return guarded


def _arg(args: tuple[Any, ...], kwargs: Mapping[str, Any], index: int, key: str) -> Any:
    return args[index] if len(args) > index else kwargs.get(key)


def _check_str_method(
    text: str, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> tuple[Any, ...]:
    """Refuse a string method that would build more than the cap; the arguments to call it
    with (an iterable `join` takes is read into a list first, to be measured)."""
    what = f"`{name}`"
    if name in ("center", "ljust", "rjust", "zfill"):
        _check_width(what, _arg(args, kwargs, 0, "width"))
    elif name == "expandtabs":
        tabsize = _arg(args, kwargs, 0, "tabsize")
        if isinstance(tabsize, int):
            _check_size(what, len(text) + text.count("\t") * abs(tabsize))
    elif name == "replace" and len(args) >= 2:
        _check_size(what, _replaced_size(text, args[0], args[1], _arg(args, kwargs, 2, "count")))
    elif name == "join" and args:
        items = list(args[0])
        _check_size(what, sum(map(_text_length, items)) + len(text) * max(0, len(items) - 1))
        args = (items, *args[1:])
    elif name == "translate" and args and isinstance(args[0], Mapping):
        longest = max((_text_length(v) for v in args[0].values() if v is not None), default=1)
        _check_size(what, len(text) * max(1, longest))
    return args


# Filters that make text of their value: it is measured before they do.
_STRINGIFIES = frozenset(
    {
        "string",
        "tojson",
        "pprint",
        "urlencode",
        "indent",
        "center",
        "replace",
        "wordwrap",
        "truncate",
        "upper",
        "lower",
        "title",
        "capitalize",
        "trim",
        "striptags",
        "escape",
        "e",
        "forceescape",
        "safe",
        "urlize",
        "xmlattr",
        "wordcount",
        "format",
    }
)


def _check_filter(
    name: str, offset: int, args: tuple[Any, ...], kwargs: Mapping[str, Any]
) -> tuple[Any, ...]:
    """Refuse a filter call that would build more than the cap, before it runs; the
    arguments to run it with (an iterable `join` takes is read into a list first)."""
    if len(args) <= offset:
        return args
    value, rest = args[offset], args[offset + 1 :]
    what = f"the {name} filter"
    if name in ("center", "batch", "slice", "wordwrap"):
        key = {"center": "width", "batch": "linecount", "slice": "slices"}.get(name, "width")
        _check_width(what, _arg(rest, kwargs, 0, key))
    if name in _STRINGIFIES:
        _check_size(what, _text_length(value))
    if name == "tojson":
        indent = _arg(rest, kwargs, 0, "indent")
        if isinstance(indent, int) and indent > 0:
            _check_size(what, _text_length(value) * (1 + indent))
    elif name == "wordwrap":
        text = str(value)
        wrap = _arg(rest, kwargs, 2, "wrapstring")
        width = _arg(rest, kwargs, 0, "width")
        lines = len(text) // max(1, width if isinstance(width, int) else 79)
        lines = min(len(text), lines + text.count(" ") + text.count("\n") + 1)
        _check_size(what, len(text) + lines * (len(wrap) if isinstance(wrap, str) else 1))
    elif name == "indent":
        width = _arg(rest, kwargs, 0, "width")
        size = width if isinstance(width, int) else len(width) if isinstance(width, str) else 0
        lines = str(value).count("\n") + 1
        _check_size(what, len(str(value)) + lines * abs(size))
    elif name == "replace" and len(rest) >= 2:
        size = _replaced_size(str(value), rest[0], rest[1], _arg(rest, kwargs, 2, "count"))
        _check_size(what, size)
    elif name == "format":
        check_percent(str(value), kwargs or tuple(rest))
    elif name == "join" and _arg(rest, kwargs, 1, "attribute") is None:
        items = list(value)
        sep = _arg(rest, kwargs, 0, "d") or ""
        total = sum(map(_text_length, items)) + _text_length(sep) * max(0, len(items) - 1)
        _check_size(what, total)
        args = (*args[:offset], items, *rest)
    return args


def _linear_sum(
    func: Callable[..., Any], offset: int, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    """The `sum` filter; lists summed in one pass within the cap, not a copy per item."""
    if len(args) <= offset:
        return func(*args, **kwargs)
    rest = args[offset + 1 :]
    start = _arg(rest, kwargs, 1, "start")
    if _arg(rest, kwargs, 0, "attribute") is None and isinstance(start, list | tuple):
        items = list(args[offset])
        if all(isinstance(item, list | tuple) for item in items):
            _check_size("the sum filter", len(start) + sum(len(item) for item in items))
            total = list(start)
            for item in items:
                total.extend(item)
            return type(start)(total)
    return func(*args, **kwargs)


class BoundedTemplate(Template):
    """A template whose every render runs under the budget."""

    def render(self, *args: Any, **kwargs: Any) -> str:
        environment = self.environment
        if isinstance(environment, BoundedSandbox):
            with environment.budget():
                return super().render(*args, **kwargs)
        return super().render(*args, **kwargs)


class BoundedExpression(TemplateExpression):
    """A compiled expression (`compile_expression`) evaluated under the budget."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        environment = self._template.environment
        if isinstance(environment, BoundedSandbox):
            with environment.budget():
                return super().__call__(*args, **kwargs)
        return super().__call__(*args, **kwargs)


BoundedSandbox.template_class = BoundedTemplate
