"""Every third-party module evalctl imports is declared in pyproject.toml (issue 32, item 9).

A module imported outside the vendor extras must come from a distribution in `dependencies`,
or an install without extras fails the first time that code runs (it did: `cases/template.py`
imported `jinja2`, which only the `local` extra brought in, so a templated suite ended in
exit 4). The imports are read from the source (lazy ones inside functions included), and each
is mapped to the distribution that installed it in this environment. The end-to-end check, a
fresh venv without extras running a templated suite, is `make install-check`
(benchmarks/clean_install.py: about a minute, too long for the test suite).
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import sys
import tomllib
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "evalctl"

# Modules only an extra provides, and the extra that must declare their distribution: the
# code importing them is reached only when that extra's feature is used.
EXTRA_ONLY = {
    "llama_cpp": "local",
    "numpy": "local",
    "openai": "openai",
    "grpc_tools": "dev",
    "psycopg": "postgres",
    "starlette": "view",
    "uvicorn": "view",
    "mcp": "mcp",
    "mcp_types": "mcp",
    "httpx2": "mcp",
}
# Namespace packages several distributions share: a module is named by its first two parts.
NAMESPACES = frozenset({"google"})
# The daemon's entry point: started only by the local provider, which needs the `local` extra.
# The grammar sampler: imported by the engine only when it generates (numpy, like llama_cpp,
# comes with the `local` extra).
# The viewer's app: imported only by `evalctl view`, after it checked the `view` extra is there.
TOP_LEVEL_ALLOWED = {
    Path("evalctl/server/__main__.py"),
    Path("evalctl/server/grammar_sampler.py"),
    Path("evalctl/view/app.py"),
}


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement.strip())
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(0)).lower()


def _project() -> dict[str, object]:
    with (REPO / "pyproject.toml").open("rb") as fh:
        project = tomllib.load(fh)["project"]
    assert isinstance(project, dict)
    return project


def _declared() -> set[str]:
    return {_name(r) for r in _project()["dependencies"]}  # type: ignore[attr-defined]


def _extra(name: str) -> set[str]:
    extras = _project()["optional-dependencies"]
    assert isinstance(extras, dict)
    return {_name(r) for r in extras[name]}


def _imports(source: Path) -> set[str]:
    """Absolute imports of one file, as dotted names (`google.genai`, `jinja2.sandbox`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"), str(source))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module in NAMESPACES:  # `from google import genai`: google.genai
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
            else:
                found.add(node.module)
    return found


def third_party_imports() -> dict[str, list[str]]:
    """Top-level third-party module (two parts for a namespace such as `google`) -> the
    files importing it."""
    out: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for dotted in _imports(path):
            top = dotted.split(".")[0]
            if top == "evalctl" or top in sys.stdlib_module_names or top == "__future__":
                continue
            key = ".".join(dotted.split(".")[:2]) if top in NAMESPACES else top
            out.setdefault(key, []).append(str(path.relative_to(REPO)))
    return out


@cache
def _top_level() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def distribution_of(module: str) -> str | None:
    """The distribution that installed `module` here; None when it is not installed."""
    parts = module.split(".")
    candidates = _top_level().get(parts[0], [])
    if len(candidates) > 1 and len(parts) > 1:
        # A namespace package shared by several distributions: the one holding the subpackage.
        prefix = "/".join(parts[:2]) + "/"
        candidates = [
            c
            for c in candidates
            if any(str(f).startswith(prefix) for f in importlib.metadata.files(c) or ())
        ]
    names = {_name(c) for c in candidates}
    return names.pop() if len(names) == 1 else None


def test_every_runtime_import_is_a_declared_dependency() -> None:
    declared = _declared()
    imports = third_party_imports()
    undeclared = {}
    for module, files in imports.items():
        if module.split(".")[0] in EXTRA_ONLY:
            continue
        dist = distribution_of(module)
        assert dist is not None, f"{module} (imported by {files[0]}) is not installed here"
        if dist not in declared:
            undeclared[module] = (dist, files[0])
    assert not undeclared, f"imported but not in [project] dependencies: {undeclared}"
    # The scan found the imports it must find (a scan that finds nothing passes vacuously).
    assert {"pydantic", "jinja2", "typer", "google.genai"} <= set(imports)


def test_extra_only_modules_are_declared_by_their_extra() -> None:
    imports = third_party_imports()
    for module, extra in EXTRA_ONLY.items():
        assert module in imports, f"{module} is no longer imported: drop it from EXTRA_ONLY"
        dist = distribution_of(module)
        assert dist is not None and dist in _extra(extra), (module, dist, extra)
        # Not also a base dependency: then it would not be extra-only.
        assert dist not in _declared()


def test_extra_only_imports_stay_lazy() -> None:
    """A vendor extra's module is imported inside a function or under TYPE_CHECKING, never
    at a module's top level, so importing evalctl's modules needs no extra."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(REPO) in TOP_LEVEL_ALLOWED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in tree.body:
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in EXTRA_ONLY, f"{path}: top-level import {name}"


def test_declared_distributions_import() -> None:
    """Each declared dependency is installed here, so the mapping above is checked against
    what pip actually put in this environment."""
    for dist in _declared():
        assert importlib.metadata.version(dist), dist
    assert importlib.util.find_spec("jinja2") is not None
