"""`lazy_attr`: the object a "package.module:attribute" string names, imported on first use.

Registries whose entries are named by string (suite kinds, tools, plugins a user lists) go
through this one helper, so a malformed or dangling target fails the same clear way
everywhere. Registries that can name their targets in code do so instead (the provider
registry imports each factory inside a function), which editors and the import linter can
follow.
"""

from __future__ import annotations

import importlib

from evalctl.errors import EvalctlError, ExitCode


def lazy_attr(target: str) -> object:
    """Import the module of `target` ("package.module:attribute") and return the attribute."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise EvalctlError(
            f"malformed target {target!r}: expected 'package.module:attribute'",
            code=ExitCode.BAD_INPUT,
        )
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise EvalctlError(
            f"{module_name} has no attribute {attr!r} (target {target!r})",
            code=ExitCode.BAD_INPUT,
        ) from None
