"""Redaction of secrets from any text that may leave the process.

Secrets come from the environment: every variable whose NAME looks secret (it contains
TOKEN, SECRET, KEY, PASSWORD or CREDENTIAL, in any case: `GITHUB_TOKEN`,
`AWS_SECRET_ACCESS_KEY`, `OPENAI_API_KEY`), plus the names listed in `redact_env` in
`evalctl.toml` (`configure`). Their exact values are replaced wherever they appear, also in
the escaped forms JSON and HTML give them. As a second line of defence, strings shaped like
Anthropic, OpenAI or Google API keys are replaced too, so a key that reached us some other way
(a gateway echoing a header, a key from another shell) is still caught.

Apply `redact()` to every string that is written or printed: provider error messages (done in
the providers), runner error strings, results/journal/repro files (`results.io` writes every
file through one function that redacts), `--json` output and logs (`RedactingFilter`).
"""

from __future__ import annotations

import html
import json
import logging
import os
import re
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


def configured_names() -> tuple[str, ...]:
    return _configured


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


def _forms(value: str) -> set[str]:
    # A value inside a JSON string or an HTML page is written escaped: "a\"b", "a&amp;b".
    return {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        html.escape(value),
        html.escape(value, quote=False),
    }


def _masks(env: Mapping[str, str] | None, extra: tuple[str, ...]) -> list[tuple[str, str]]:
    """(text to replace, the variable it came from), longest first."""
    extra = (*extra, *_remembered)
    key = (tuple((env or {}).items()), tuple(os.environ.items()), _configured, extra)
    cached = _masks_cache.get(key)
    if cached is not None:
        return cached
    values = secret_values(env)
    for value in extra:
        if len(value) >= MIN_SECRET_LEN:
            values.setdefault(value, "SECRET")
    masks: dict[str, str] = {}
    for value, name in values.items():
        for form in _forms(value):
            masks.setdefault(form, name)
    # Longest first, so a key that contains another key is masked whole.
    found = sorted(masks.items(), key=lambda item: len(item[0]), reverse=True)
    # redact() runs on every string of every document written: the environment is read
    # once per change of it, not once per string. A few entries cover a process's life.
    if len(_masks_cache) > 16:
        _masks_cache.clear()
    _masks_cache[key] = found
    return found


_masks_cache: dict[Any, list[tuple[str, str]]] = {}


def redact(text: str, env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> str:
    """Replace every known secret value (and anything shaped like a key) in `text`."""
    if not text:
        return text
    for value, name in _masks(env, tuple(extra)):
        if value in text:
            text = text.replace(value, _mask(name))
    for pattern in _KEY_PATTERNS:
        text = pattern.sub(_mask("API_KEY"), text)
    return text


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
