"""docs/architecture.md stays true of the tree (issue 32, item 10).

- "Modules and their one job" names every module under `evalctl/` (generated code apart),
  and every module it names exists. A row's first cell names modules or packages by path
  (`evalctl/chat.py`, `evalctl/providers/`); a package's row names its modules in the second
  cell by their path inside it (`base.py`, `kit/card.py`), and a subpackage by its folder
  (`kit/`). `__init__.py` needs no mention: its package's row is it.
- Any `x/y.py` the rest of the page names (`runner/case.py`) is a file of the tree.
- The layer diagram names every layer of the import contract in pyproject.toml.
- "Extension points: the base classes" has a row for every abstract base class under
  `evalctl/`, names its real module and class, lists every abstract member as required and
  only members the class has, and names the `Registry` call a plugin registers it with.

A failure lists exactly what is missing or extra, so the doc can be fixed from the message.
"""

from __future__ import annotations

import ast
import importlib
import re
import tomllib
from pathlib import Path

from tests.conftest import REPO

DOC_PATH = REPO / "docs" / "architecture.md"
PACKAGE = REPO / "evalctl"
# Generated from proto/ by `make proto`: named as a folder (`gen/`), never module by module.
GENERATED = (PACKAGE / "server" / "gen",)
MODULE_TABLE = "## Modules and their one job"
EXTENSIONS = "## Extension points"
# A backticked path: `evalctl/cli/`, `base.py`, `kit/card.py`, `runner/case.py`. Globs and
# placeholders (`reports/matrix_*.py`, `cli/<command>.py`) are not paths.
PATH_TOKEN = re.compile(r"^[\w./-]*\w(\.py|/)$")


def _doc() -> str:
    return DOC_PATH.read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start : end if end != -1 else len(text)]


def _cells(line: str) -> list[str]:
    # `\|` inside a cell is a pipe of the text, not a column.
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def _rows(section: str) -> list[list[str]]:
    lines = [line for line in section.splitlines() if line.startswith("|")]
    return [_cells(line) for line in lines[2:]]  # past the header and its rule


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix() + ("/" if path.is_dir() else "")


def _modules() -> set[str]:
    return {
        _rel(path)
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" and not any(g in path.parents for g in GENERATED)
    }


def _module_table() -> tuple[set[str], list[str]]:
    """The modules the table names (as paths from the repository's root), and the paths it
    names that are not in the tree, each with its row."""
    named: set[str] = set()
    missing: list[str] = []
    for row in _rows(_section(_doc(), MODULE_TABLE)):
        if len(row) < 2:
            continue
        heads = [t for t in _ticked(row[0]) if t.startswith("evalctl/")]
        for head in heads:
            path = REPO / head
            if not path.exists():
                missing.append(f"{head} (a row of its own)")
            elif path.is_file():
                named.add(head)
        for package in (REPO / h for h in heads if h.endswith("/")):
            for token in _ticked(row[1]):
                if not PATH_TOKEN.match(token):
                    continue
                own = package / token
                if own.exists():
                    if own.is_file():
                        named.add(_rel(own))
                elif not (PACKAGE / token).exists() and not (REPO / token).exists():
                    missing.append(f"{_rel(package)}{token} (named in the row of {_rel(package)})")
    return named, missing


def test_the_module_table_names_every_module_and_only_modules_that_exist() -> None:
    named, missing = _module_table()
    unnamed = sorted(_modules() - named)
    problems = []
    if unnamed:
        problems.append(
            "modules the table does not name (give each one line: a row of its own, or "
            "`name.py` in its package's row):\n" + "\n".join(f"  {m}" for m in unnamed)
        )
    if missing:
        problems.append(
            "modules the table names that are not in the tree (remove or rename them):\n"
            + "\n".join(f"  {m}" for m in sorted(missing))
        )
    assert not problems, f"{_rel(DOC_PATH)}, '{MODULE_TABLE[3:]}':\n" + "\n".join(problems)


def test_every_file_the_page_names_exists() -> None:
    text = _doc()
    rest = text.replace(_section(text, MODULE_TABLE), "")
    rest = re.sub(r"```.*?```", "", rest, flags=re.S)  # diagrams: no backticked names
    gone = sorted(
        {
            token
            for token in _ticked(rest)
            if token.endswith(".py")
            and PATH_TOKEN.match(token)
            and not (PACKAGE / token).exists()
            and not (REPO / token).exists()
        }
    )
    assert not gone, (
        f"{_rel(DOC_PATH)} names files that are not in the tree (as paths under evalctl/ or "
        "from the repository's root): " + ", ".join(gone)
    )


def test_the_layer_diagram_names_every_layer_of_the_contract() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layers = next(c for c in contracts if c["id"] == "layers")["layers"]
    diagram = _section(_doc(), "## Layers").split("```")[1]
    names = [name.strip() for layer in layers for name in layer.split("|")]
    absent = [n for n in names if not re.search(rf"(?<![\w.]){re.escape(n)}(?![\w.])", diagram)]
    assert not absent, (
        f"{_rel(DOC_PATH)}: the layer diagram lacks these layers of [tool.importlinter] in "
        f"pyproject.toml: {', '.join(absent)}"
    )


def _abstract_bases() -> set[tuple[str, str]]:
    """Every class under evalctl/ that derives from ABC, as (module path, class name)."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        if any(g in path.parents for g in GENERATED):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(base) in ("ABC", "abc.ABC") for base in node.bases
            ):
                found.add((path.relative_to(PACKAGE).as_posix(), node.name))
    return found


def _members(cell: str) -> list[str]:
    """The member names a cell lists: the first word of each backticked name, the
    parenthesised remarks left out."""
    plain = re.sub(r"\([^()]*\)", "", cell)
    return [t.split()[0] for t in _ticked(plain) if t.split() and t.split()[0] != "none"]


def test_the_extension_points_table_is_the_base_classes() -> None:
    from evalctl.plugin import Registry

    rows = [r for r in _rows(_section(_doc(), EXTENSIONS)) if len(r) >= 5]
    problems: list[str] = []
    listed: set[tuple[str, str]] = set()
    for point, base, required, optional, registered in (r[:5] for r in rows):
        ticked = _ticked(base)
        if len(ticked) < 2:
            problems.append(f"{point}: the base class cell should read `path.py` `Class`")
            continue
        path, name = ticked[0], ticked[1].split("[")[0]
        listed.add((path, name))
        try:
            dotted = path.removesuffix(".py").replace("/", ".")
            module = importlib.import_module(f"evalctl.{dotted}")
            cls = getattr(module, name)
        except (ImportError, AttributeError):
            problems.append(f"{point}: no class {name} in evalctl/{path}")
            continue
        annotated = set().union(*(getattr(k, "__annotations__", {}) for k in cls.__mro__))
        for member in _members(required) + _members(optional):
            if not hasattr(cls, member) and member not in annotated:
                problems.append(f"{point}: {name} has no member {member!r}")
        for member in sorted(getattr(cls, "__abstractmethods__", ())):
            if member not in _members(required):
                problems.append(f"{point}: {name}.{member} is abstract: list it as required")
        calls = [c for c in _members(registered) if c.startswith("Registry.")]
        if not calls and "not a plugin" not in registered:
            problems.append(f"{point}: name the Registry call a plugin registers one with")
        for call in calls:
            method = call.removeprefix("Registry.").split("(")[0]
            if not hasattr(Registry, method):
                problems.append(f"{point}: evalctl/plugin.py's Registry has no {method!r}")
    for path, name in sorted(_abstract_bases() - listed):
        problems.append(f"no row for the abstract base class {name} (evalctl/{path})")
    assert not problems, f"{_rel(DOC_PATH)}, '{EXTENSIONS[3:]}':\n" + "\n".join(
        f"  {p}" for p in problems
    )
