"""The environment a command or python tool runs with: an allowlist of harmless variables plus
the ones the tool declares (`env = [...]` on `[[suite.tool]]`), never the whole of evalctl's.

evalctl's own environment holds provider keys and CI tokens; a tool that inherited it could
read them and hand them to the model (and so to the judge, the results and the logs). The
allowlist is what programs need to find their tools, locale, home and temp directory.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

# Passed to every tool when set. None of them names a secret; each is something ordinary
# programs (a shell, python3, git) need to behave as they do in a terminal.
ALLOWED_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TERM",
    "TMPDIR",
    "TEMP",
    "TMP",
    # A python tool and a `python3 script.py` command find their modules as evalctl does.
    "PYTHONPATH",
    "VIRTUAL_ENV",
    # Windows cannot start processes without these.
    "SYSTEMROOT",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
)
# Every locale variable: LC_ALL, LC_CTYPE, ...
ALLOWED_PREFIXES = ("LC_",)


def allowed(name: str) -> bool:
    return name in ALLOWED_ENV or name.startswith(ALLOWED_PREFIXES)


def tool_environment(
    declared: Iterable[str], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables of `environ` (default: this process's) a tool may see: the allowlist and
    the names it declares. A declared name that is not set is simply absent."""
    source = os.environ if environ is None else environ
    wanted = set(declared)
    return {name: value for name, value in source.items() if allowed(name) or name in wanted}
