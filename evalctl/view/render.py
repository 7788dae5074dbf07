"""The Jinja2 environment every page is drawn with: the templates beside this module,
autoescape on for every template (transcripts, answers and case ids are untrusted), and
undefined names an error rather than an empty string."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from evalctl.reports.kit.card import STATUS_COLOURS
from evalctl.view.links import Links

TEMPLATES = Path(__file__).resolve().parent / "templates"
# Verdict tones (errors.ExitCode's) in the status colours.
_TONES = {"ok": "#1a7f37", "bad": "#cf222e", "warn": "#9a6700", "infra": "#8250df"}


def colour(status: str) -> str:
    return STATUS_COLOURS.get(status) or _TONES.get(status) or "#6e7781"


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.globals["colour"] = colour
    return env


def render(template: str, context: dict[str, Any], links: Links, suites: list[str]) -> str:
    """The page `template` draws from `context`; `suites` name the trend pages in the bar."""
    return environment().get_template(template).render(links=links, nav_suites=suites, **context)
