"""The shipped examples validate on a fresh clone (issue 38, deliver 7): `evalctl cases
validate examples/` and `examples/app` exit 0 with no build output present. The Cellar's
catalog, wines.db, is built by the application on first use, and its suites say so
(`built_by_app = true`); a directory holding no suite itself means the suites below it."""

from __future__ import annotations

import shutil
import sqlite3
import tomllib
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli
from tests.conftest import REPO

NAMES = (
    "[[case.assert]]\ntype = \"names-in\"\npattern = '\\[WINE:\\d+\\]\\s*\\n([^\\n]+)'\n"
    'names_from = {{ sqlite = "{db}", query = "SELECT name FROM wines"{extra} }}\n'
)


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """examples/ as a fresh clone has it: no build outputs, no caches."""
    target = tmp_path / "clone" / "examples"
    shutil.copytree(REPO / "examples", target, ignore=shutil.ignore_patterns("*.db", "__pycache__"))
    assert not list(target.rglob("*.db"))
    return target


@pytest.mark.parametrize("where", [".", "app"])
def test_the_examples_validate_on_a_fresh_clone(
    clone: Path, where: str, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(capsys, "cases", "validate", str(clone / where))
    assert result.code == 0, result.err
    assert result.out.startswith("ok ")
    # Validating reads the suites only: no catalog was built by it.
    assert not list(clone.rglob("*.db"))


def test_a_directory_without_suites_means_the_suites_below_it(
    clone: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reply scripts, data files and evalctl.toml below it are left aside; every suite is
    read (the count is each example directory's own, added up)."""
    total = 0
    for directory in sorted(p for p in clone.iterdir() if p.is_dir()):
        alone = run_cli(capsys, "cases", "validate", *_suites_in(directory))
        assert alone.code == 0, alone.err
        total += int(alone.out.split()[1])
    result = run_cli(capsys, "cases", "validate", str(clone))
    assert result.code == 0, result.err
    assert result.out.split()[1] == str(total)


def _suites_in(directory: Path) -> list[str]:
    return [
        str(p)
        for p in sorted(directory.rglob("*.toml"))
        if "suite" in tomllib.loads(p.read_text(encoding="utf-8"))
    ]


def test_a_directory_with_no_suite_anywhere_is_still_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "replies.toml").write_text('[[default]]\ncontent = "hi"\n')
    result = run_cli(capsys, "cases", "validate", str(tmp_path))
    assert result.code == 2
    assert "no suite files" in result.err


def _suite(tmp_path: Path, db: str, extra: str = "") -> Path:
    (tmp_path / ".git").mkdir(exist_ok=True)
    path = tmp_path / "wines.toml"
    path.write_text(
        '[suite]\nname = "wines"\nkind = "assert"\n[[case]]\nid = "c1"\n'
        'input = { prompt = "?" }\n' + NAMES.format(db=db, extra=extra)
    )
    return path


def test_a_missing_database_is_exit_2_unless_the_application_builds_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = run_cli(capsys, "cases", "validate", str(_suite(tmp_path, "app/wines.db")))
    assert missing.code == 2
    assert "file not found: app/wines.db" in missing.err and "built_by_app = true" in missing.err
    built = _suite(tmp_path, "app/wines.db", ", built_by_app = true")
    result = run_cli(capsys, "cases", "validate", str(built))
    assert result.code == 0, result.err
    # Once it is there, the query is held to the read-only rule at validate time too.
    (tmp_path / "app").mkdir()
    with sqlite3.connect(tmp_path / "app" / "wines.db") as db:
        db.execute("CREATE TABLE wines (name TEXT)")
    db.close()
    assert run_cli(capsys, "cases", "validate", str(built)).code == 0
    refused = _suite(tmp_path, "app/wines.db", ", built_by_app = true").read_text()
    built.write_text(refused.replace("SELECT name FROM wines", "DELETE FROM wines"))
    result = run_cli(capsys, "cases", "validate", str(built))
    assert result.code == 2 and "names_from.query" in result.err


def test_built_by_app_does_not_lift_the_path_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    suite = _suite(project, "../elsewhere/wines.db", ", built_by_app = true")
    result = run_cli(capsys, "cases", "validate", str(suite))
    assert result.code == 2
    assert "names_from.sqlite" in result.err and "out of the project" in result.err
