"""The built-in plugins, named once: the `assert` kind with its assertion types, the built-in
suites (one package each: its kind, tools and the resources it needs), and the judge.

Each registers through the same API (evalctl.plugin) as a third-party plugin. This is the one
module of the core that names them, as plain imports the import contract can see (the
`core-names-no-suite` contract allows exactly this edge); `evalctl.plugin_loader` loads them
before entry points and `evalctl.toml` plugins. Each `register` imports what it registers
lazily, so importing this module costs little.
"""

from __future__ import annotations

from collections.abc import Callable

from evalctl import assertions, judge, retrieval
from evalctl.plugin import Registry
from evalctl.suites import asset_triage, release_assets, sommelier

# (the name `evalctl plugins` shows, its register function), in loading order.
BUILTIN_PLUGINS: tuple[tuple[str, Callable[[Registry], None]], ...] = (
    ("evalctl.assertions", assertions.register),
    ("evalctl.retrieval", retrieval.register),
    ("evalctl.suites.release_assets", release_assets.register),
    ("evalctl.suites.asset_triage", asset_triage.register),
    ("evalctl.suites.sommelier", sommelier.register),
    ("evalctl.judge", judge.register),
)
