"""Redaction of secrets from any text that may leave the process.

Secrets come from the environment: every variable whose NAME looks secret (it contains
TOKEN, SECRET, KEY, PASSWORD or CREDENTIAL, in any case: `GITHUB_TOKEN`,
`AWS_SECRET_ACCESS_KEY`, `OPENAI_API_KEY`), plus the names listed in `redact_env` in
`evalctl.toml` (`configure`). Their exact values are replaced wherever they appear, also in
every escaped form a file gives them: JSON-escaped to any depth up to 8 (a secret with a `"` in a
tool's JSON, inside a results file's JSON string, is escaped twice), HTML-escaped (the
pages, JUnit), escaped for a Markdown table, and URL-encoded. As a second line of defence,
strings shaped like Anthropic, OpenAI or Google API keys are replaced too, so a key that
reached us some other way (a gateway echoing a header, a key from another shell) is still
caught.

Apply `redact()` to every string that is written or printed: provider error messages (done in
the providers), runner error strings, results/journal/repro files (`results.io` writes every
file through one function that redacts), `--json` output and logs (`RedactingFilter`).
"""

from __future__ import annotations

import functools
import html
import json
import logging
import os
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

# The provider keys: what a provider keeps of its environment for its own redaction.
SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY")

# A variable whose name contains one of these words (any case) holds a secret.
# (Not AUTH: it would take GIT_AUTHOR_NAME, and a name is no secret.)
SECRET_NAME_WORDS = ("TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL")
_SECRET_NAME = re.compile("|".join(SECRET_NAME_WORDS), re.IGNORECASE)

# Values shorter than this are not redacted by value: replacing every "1" or "yes" in a text
# would destroy it while protecting nothing (no real secret is that short). Pattern-based
# redaction below still applies.
MIN_SECRET_LEN = 6

# Shapes of real keys: Anthropic `sk-ant-...`, OpenAI `sk-...`/`sk-proj-...` (20+ characters
# after the prefix), Google `AIza` + 35 characters.
_KEY_PATTERNS = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"sk-[A-Za-z0-9_\-]{20,}"),
    re.compile(r"AIza[0-9A-Za-z_\-]{35}"),
)

# Names from `redact_env` in evalctl.toml, set by `configure` whenever settings are loaded.
_configured: tuple[str, ...] = ()


def configure(names: Iterable[str]) -> None:
    """Redact the values of these variables too (`redact_env`), whatever their names."""
    global _configured
    _configured = tuple(names)


# Values redacted whatever variable they came from (`remember_values`).
_remembered: tuple[str, ...] = ()


def remember_values(values: Iterable[str]) -> None:
    """Redact these exact values from now on, for the rest of the process: a secret that was
    read once into a header (an HTTP target's `${VAR}`) stays redacted even if its variable
    is not in this process's environment, or its name does not look secret."""
    global _remembered
    _remembered = tuple(dict.fromkeys([*_remembered, *values]))


def looks_secret(name: str) -> bool:
    """Whether a variable's name says it holds a secret (`GITHUB_TOKEN`, `DB_PASSWORD`)."""
    return _SECRET_NAME.search(name) is not None or name in _configured


def _mask(name: str) -> str:
    return f"[REDACTED:{name}]"


def secret_values(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The secret values to redact, mapped to the variable they came from.

    Both `env` (what a provider was configured with) and `os.environ` are consulted: a value
    present in either must never be printed.
    """
    found: dict[str, str] = {}
    for source in (env or {}, os.environ):
        for var, raw in source.items():
            if not looks_secret(var):
                continue
            value = raw.strip()
            if len(value) >= MIN_SECRET_LEN and value not in found:
                found[value] = var
    return found


# How many levels of JSON-in-JSON a secret is looked for at most: each level doubles the
# backslashes before an escaped character, so the text itself bounds how deep it can go
# (`_json_depth`); 8 levels are 255 backslashes before one quote, far past any file's
# nesting, and keep each form of a secret short (at most 256 times its length).
MAX_JSON_DEPTH = 8


def _json_depth(text: str) -> int:
    """The deepest JSON escaping a secret in `text` can be under: escaped d times, a secret
    with anything JSON escapes holds a run of at least 2^(d-1) backslashes (`%5C` once
    URL-encoded)."""
    depth = 1
    while depth < MAX_JSON_DEPTH:
        run = 1 << depth
        if "\\" * run not in text and "%5C" * run not in text:
            break
        depth += 1
    return depth


def _escaped_once(value: str) -> set[str]:
    """`value` inside a JSON string, as JSON and TOML writers escape it: non-ASCII as it is,
    or as \\u escapes (`json.dumps`' default)."""
    return {json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1]}


def _markdown_cell(text: str) -> str:
    """As `reports.markdown.cell` writes text in a table: HTML's three, then Markdown's own
    characters backslash-escaped."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    for char in "\\|`*_[]":
        text = text.replace(char, "\\" + char)
    return text


def _written(text: str) -> set[str]:
    """The ways a page, a table or a URL writes `text`: HTML-escaped as `html.escape` (with
    and without quotes), the report kit and ElementTree (`&quot;`, `'` as it is) and Jinja
    (`&#34;`, `&#39;`) do; in a Markdown table cell; URL-encoded (`%20` or `+`)."""
    plain = html.escape(text, quote=False)
    return {
        text,
        plain,
        html.escape(text),
        plain.replace('"', "&quot;"),
        plain.replace('"', "&#34;").replace("'", "&#39;"),
        _markdown_cell(text),
        urllib.parse.quote(text, safe=""),
        urllib.parse.quote(text),
        urllib.parse.quote_plus(text),
    }


@functools.lru_cache(maxsize=64)
def _forms(value: str, depth: int) -> tuple[str, ...]:
    """Every form of `value` redaction looks for, longest first: as it is and JSON-escaped
    once, twice, ... `depth` times (a tool's JSON inside a JSON result inside results.json),
    each of those as a page, a table cell or a URL writes it (`_written`)."""
    level = {value}
    chains = {value}
    for _ in range(depth):
        level = {form for text in level for form in _escaped_once(text)}
        chains |= level
    forms = {written for chain in chains for written in _written(chain)}
    return tuple(sorted(forms, key=len, reverse=True))


# A secret's longest run of ASCII letters and digits: every escaping above keeps it as it
# is, so a text without it holds none of the secret's forms.
_PLAIN_RUN = re.compile("[A-Za-z0-9]+")


def _core(value: str) -> str:
    return max(_PLAIN_RUN.findall(value), key=len, default="")


def _secrets(env: Mapping[str, str] | None, extra: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """(value, the variable it came from, its core), longest first."""
    extra = (*extra, *_remembered)
    key = (tuple((env or {}).items()), tuple(os.environ.items()), _configured, extra)
    cached = _secrets_cache.get(key)
    if cached is not None:
        return cached
    values = secret_values(env)
    for value in extra:
        if len(value) >= MIN_SECRET_LEN:
            values.setdefault(value, "SECRET")
    # Longest first, so a key that contains another key is masked whole.
    found = [
        (value, name, _core(value))
        for value, name in sorted(values.items(), key=lambda item: len(item[0]), reverse=True)
    ]
    # redact() runs on every string of every document written: the environment is read
    # once per change of it, not once per string. A few entries cover a process's life.
    if len(_secrets_cache) > 16:
        _secrets_cache.clear()
    _secrets_cache[key] = found
    return found


_secrets_cache: dict[Any, list[tuple[str, str, str]]] = {}


def redact(text: str, env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> str:
    """Replace every known secret value (and anything shaped like a key) in `text`: in its
    raw, JSON-escaped (JSON in JSON, up to MAX_JSON_DEPTH levels), HTML-escaped,
    Markdown-escaped and URL-encoded forms."""
    if not text:
        return text
    depth = 0
    masks: list[tuple[str, str]] = []
    for value, name, core in _secrets(env, tuple(extra)):
        if len(core) >= 3 and core not in text:
            continue  # no form of it can be here
        depth = depth or _json_depth(text)
        masks.extend((form, name) for form in _forms(value, depth))
    # Longest first, across secrets: a secret inside another is masked as part of it.
    masks.sort(key=lambda mask: len(mask[0]), reverse=True)
    for form, name in masks:
        if form in text:
            text = text.replace(form, _mask(name))
    for pattern in _KEY_PATTERNS:
        text = pattern.sub(_mask("API_KEY"), text)
    return text


def redact_before_cut(text: str, limit: int) -> str:
    """`text`, redacted first when it is longer than `limit`: a renderer that keeps only the
    first `limit` characters of a value calls this before cutting, so a secret the cut would
    split is masked whole, not left as a start the file's own redaction cannot recognise."""
    return redact(text) if len(text) > limit else text


def redact_data(data: Any, env: Mapping[str, str] | None = None) -> Any:
    """`redact()` applied to every string inside nested dicts/lists/tuples (keys included).

    Meant for documents about to be written (results JSON, journal lines, repro files).
    """
    if isinstance(data, str):
        return redact(data, env)
    if isinstance(data, Mapping):
        return {redact_data(k, env): redact_data(v, env) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return type(data)(redact_data(v, env) for v in data)
    return data


class RedactingFilter(logging.Filter):
    """A logging filter that redacts the rendered message of every record it sees.

    Install it on handlers (not loggers) so records from SDK loggers are covered too.
    """

    def __init__(self, env: Mapping[str, str] | None = None):
        super().__init__()
        self._env = dict(env) if env is not None else None

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message, self._env)
        if cleaned != message:
            record.msg = cleaned
            record.args = None
        return True
