"""The budget one template renders under: how long it may take and how much text it may make.

A case's `{{ var }}` template is user input, rendered by `validate` and `run` alike; its
sandbox (evalctl.cases.sandbox) holds each render to this budget and refuses a template
past it (exit 2, naming file, case and field). `template_time_s` and `template_max_chars` in
evalctl.toml set it (`configure`, called whenever settings load); the defaults are far above
any prompt a template makes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TemplateBudget:
    # Seconds one render may take, whatever it does.
    time_s: float = 2.0
    # Characters one render may output, captured blocks and macros included, and the most
    # any one operation in it may build (a string, a list, a width).
    max_chars: int = 1_000_000


DEFAULT = TemplateBudget()

# What one template may hold, so compiling it (which comes before any render, and grows
# faster than linearly in some shapes) stays within seconds: placeholders and tags (`{{`,
# `{%`; 10,000 take about a second here), characters inside them, and syntax-tree nodes.
MAX_TAGS = 10_000
MAX_MARKUP_CHARS = 100_000
MAX_NODES = 30_000
_current = DEFAULT


def configure(time_s: float | None = None, max_chars: int | None = None) -> None:
    """The budget of every later render (None: the default)."""
    global _current
    _current = TemplateBudget(
        DEFAULT.time_s if time_s is None else time_s,
        DEFAULT.max_chars if max_chars is None else max_chars,
    )


def current() -> TemplateBudget:
    return _current
