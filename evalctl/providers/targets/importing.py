"""Finding a user's `module:function` or `module:Class.method`: the suite's folder first, so
a suite next to its application runs from any working directory, then sys.path."""

from __future__ import annotations

import importlib
import sys
import threading
from pathlib import Path
from typing import Any

_lock = threading.Lock()


class ImportProblem(Exception):
    """The spec names nothing importable; the message says what is missing."""


def import_module(name: str, suite_dir: Path) -> Any:
    with _lock:
        folder = str(suite_dir.resolve())
        # Kept on the path: the module may import its siblings later, lazily.
        if folder not in sys.path:
            sys.path.insert(0, folder)
        try:
            return importlib.import_module(name)
        except ImportError as exc:
            raise ImportProblem(
                f"cannot import {name!r} from {folder} or sys.path: {exc}"
            ) from None
        except Exception as exc:  # the module's own code failed while importing
            raise ImportProblem(f"importing {name!r} raised {type(exc).__name__}: {exc}") from None


def split_spec(spec: str) -> tuple[str, list[str]]:
    """`pkg.mod:Class.method` -> ("pkg.mod", ["Class", "method"])."""
    module, _, attrs = spec.partition(":")
    return module, attrs.split(".")


def load_object(spec: str, suite_dir: Path) -> Any:
    """The object `spec` names, or ImportProblem saying which part is missing."""
    module_name, attrs = split_spec(spec)
    obj = import_module(module_name, suite_dir)
    for depth, attr in enumerate(attrs):
        if not hasattr(obj, attr):
            where = ".".join([module_name, *attrs[:depth]])
            raise ImportProblem(f"{where} has no attribute {attr!r}")
        obj = getattr(obj, attr)
    return obj
