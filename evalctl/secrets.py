"""Redaction of API keys from any text that may leave the process.

Keys come from the environment (the variables in `SECRET_ENV_VARS`); their exact values are
replaced wherever they appear. As a second line of defence, strings shaped like Anthropic,
OpenAI or Google API keys are replaced too, so a key that reached us some other way (a gateway
echoing a header, a key from another shell) is still caught.

Apply `redact()` to every string that is written or printed: provider error messages (done in
the providers), runner error strings, results/journal/repro files, `--json` output and logs
(`RedactingFilter`).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

SECRET_ENV_VARS = ("ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY", "OPENAI_API_KEY")

# Values shorter than this are not redacted by value: replacing every "a" or "x" in a text
# would destroy it while protecting nothing (no real key is that short). Pattern-based
# redaction below still applies.
MIN_SECRET_LEN = 6

# Shapes of real keys: Anthropic `sk-ant-...`, OpenAI `sk-...`/`sk-proj-...` (20+ characters
# after the prefix), Google `AIza` + 35 characters.
_KEY_PATTERNS = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"sk-[A-Za-z0-9_\-]{20,}"),
    re.compile(r"AIza[0-9A-Za-z_\-]{35}"),
)


def _mask(name: str) -> str:
    return f"[REDACTED:{name}]"


def secret_values(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The secret values to redact, mapped to the variable they came from.

    Both `env` (what a provider was configured with) and `os.environ` are consulted: a value
    present in either must never be printed.
    """
    found: dict[str, str] = {}
    for source in (env or {}, os.environ):
        for var in SECRET_ENV_VARS:
            value = source.get(var, "").strip()
            if len(value) >= MIN_SECRET_LEN and value not in found:
                found[value] = var
    return found


def redact(text: str, env: Mapping[str, str] | None = None, extra: Iterable[str] = ()) -> str:
    """Replace every known secret value (and anything shaped like a key) in `text`."""
    if not text:
        return text
    values = secret_values(env)
    for value in extra:
        if len(value) >= MIN_SECRET_LEN:
            values.setdefault(value, "SECRET")
    # Longest first, so a key that contains another key is masked whole.
    for value in sorted(values, key=len, reverse=True):
        if value in text:
            text = text.replace(value, _mask(values[value]))
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
