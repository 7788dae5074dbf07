"""`evalctl init`: the starter suite validates and its scripted run is green at once; init
never overwrites a file unless told to."""

from __future__ import annotations

import json
from pathlib import Path

from tests.assert_helpers import evalctl


def test_the_starter_suite_runs_green_on_the_scripted_provider(tmp_path: Path) -> None:
    made = evalctl(tmp_path, "init", "--json")
    assert made.returncode == 0, made.stderr
    out = json.loads(made.stdout)
    assert out["files"] == [
        "cases/starter.toml",
        "cases/fixtures/opening_hours.json",
        "cases/scripts/starter.toml",
    ]
    assert all((tmp_path / f).is_file() for f in out["files"])
    run_command = next(c for c in out["next"] if "--provider scripted" in c and "run" in c)

    assert evalctl(tmp_path, "cases", "validate").returncode == 0
    ran = evalctl(tmp_path, *run_command.split()[1:], "--json")
    assert ran.returncode == 0, ran.stderr
    summary = json.loads(ran.stdout)["summary"]
    assert (summary["total"], summary["passed"]) == (2, 2)


def test_init_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    target = tmp_path / "project"
    assert evalctl(tmp_path, "init", str(target)).returncode == 0
    suite = target / "cases" / "starter.toml"
    suite.write_text("# mine\n")
    again = evalctl(tmp_path, "init", str(target))
    assert again.returncode == 2
    assert "would overwrite" in again.stderr and "--force" in again.stderr
    # The error names a file it would overwrite, in text and in --json.
    assert again.stderr.startswith(f"error: {suite}: already exists")
    refused = json.loads(evalctl(tmp_path, "init", str(target), "--json").stdout)["error"]
    assert refused["file"] == str(suite) and refused["field"] is None
    assert str(target / "cases" / "scripts" / "starter.toml") in refused["message"]
    assert suite.read_text() == "# mine\n"
    assert evalctl(tmp_path, "init", str(target), "--force").returncode == 0
    assert suite.read_text().startswith("# A starter suite written by `evalctl init`")
