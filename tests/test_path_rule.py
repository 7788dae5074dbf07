"""The path rule (issue 29, deliver 1; docs/security.md, "The path rule"): a file a suite
names (`fixture`, `cases_from`) resolves inside the suite's project, or the suite is refused
with exit 2 naming the file and field; `--allow-outside-paths` lets it out, evalctl.toml's
`allow_outside_paths` too, except under --no-tools-exec. Names built from ids (matrix cells)
are one plain file name, and `baseline --out` replaces only a baseline."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from evalctl import userpaths
from evalctl.errors import BadInputError
from tests.cli_helpers import run_cli

SECRET = "s3cr3t-outside-the-project"

FIXTURE_SUITE = """
[suite]
name = "probe"
kind = "assert"
system_prompt = "Answer."
tools = ["lookup"]

[[suite.tool]]
name = "lookup"
description = "Looks a key up"
fixture = "{fixture}"
key = "k"
parameters = {{ type = "object", properties = {{ k = {{ type = "string" }} }} }}

[[case]]
id = "one"
input = {{ prompt = "hi" }}
[[case.assert]]
type = "contains"
value = "hi"
"""

DATA_SUITE = """
[suite]
name = "rows"
kind = "assert"
system_prompt = "Answer."
cases_from = "{data}"

[suite.case_template]
input = {{ prompt = "Say {{{{ word }}}}" }}
[[suite.case_template.assert]]
type = "contains"
value = "{{{{ word }}}}"
"""

REPLIES = """
[[cases."probe/one"]]
content = "hi"
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project (its evalctl.toml marks it) with a cases/ directory, the working directory;
    beside it, outside, a file holding a secret."""
    root = tmp_path / "project"
    (root / "cases").mkdir(parents=True)
    (root / "evalctl.toml").write_text("")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.json").write_text(json.dumps({"x": SECRET}))
    (outside / "rows.csv").write_text(f"id,word\nr1,{SECRET}\n")
    monkeypatch.chdir(root)
    return root


def _fixture_suite(project: Path, fixture: str) -> Path:
    path = project / "cases" / "probe.toml"
    path.write_text(FIXTURE_SUITE.format(fixture=fixture))
    return path


def _data_suite(project: Path, data: str) -> Path:
    path = project / "cases" / "rows.toml"
    path.write_text(DATA_SUITE.format(data=data))
    return path


def _ways_out(project: Path, name: str) -> dict[str, str]:
    """Three ways to name the outside file `name`: absolute, `..` out, a symlink out."""
    target = project.parent / "outside" / name
    (project / "cases" / f"link-{name}").symlink_to(target)
    return {
        "absolute": str(target),
        "dotdot": f"../../outside/{name}",
        "symlink": f"link-{name}",
    }


@pytest.mark.parametrize("way", ["absolute", "dotdot", "symlink"])
def test_a_fixture_outside_the_project_is_refused_naming_file_and_field(
    project: Path, way: str, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _fixture_suite(project, _ways_out(project, "secret.json")[way])
    result = run_cli(capsys, "cases", "validate", str(suite))
    assert result.code == 2, result.err
    assert str(suite) in result.err
    assert "field 'suite.tool[1].fixture'" in result.err
    words = {"absolute": "absolute path", "dotdot": "with '..'", "symlink": "through a symlink"}
    assert words[way] in result.err
    assert SECRET not in result.out + result.err


@pytest.mark.parametrize("way", ["absolute", "dotdot", "symlink"])
def test_a_data_file_outside_the_project_is_refused_naming_file_and_field(
    project: Path, way: str, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _data_suite(project, _ways_out(project, "rows.csv")[way])
    result = run_cli(capsys, "cases", "validate", str(suite))
    assert result.code == 2, result.err
    assert str(suite) in result.err and "field 'suite.cases_from'" in result.err
    assert "outside" in result.err or "out of the project" in result.err
    assert SECRET not in result.out + result.err


def test_run_under_no_tools_exec_reads_nothing_outside_and_writes_no_results(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe of the issue: on the safe path, a fixture out of the project reached the
    model and results.json."""
    suite = _fixture_suite(project, "../../outside/secret.json")
    script = project / "replies.toml"
    script.write_text(REPLIES)
    monkeypatch.setenv("EVALCTL_NO_TOOLS_EXEC", "1")
    out = project / "out"
    result = run_cli(
        capsys,
        *("run", "--provider", "scripted", "--script", str(script), "--cases", str(suite)),
        *("--out", str(out), "--no-progress"),
    )
    assert result.code == 2, result.err
    assert "field 'suite.tool[1].fixture'" in result.err
    assert not (out / "results.json").exists()


def test_paths_that_stay_inside_the_project_are_fine_dotdot_and_symlinks_included(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "data").mkdir()
    (project / "data" / "rows.csv").write_text("id,word\nr1,hello\n")
    (project / "cases" / "rows-link.csv").symlink_to(project / "data" / "rows.csv")
    for name in ("../data/rows.csv", "rows-link.csv"):
        suite = _data_suite(project, name)
        result = run_cli(capsys, "cases", "validate", str(suite))
        assert result.code == 0, result.err
        assert "ok 1 case" in result.out


def test_the_flag_lets_a_path_out_even_under_no_tools_exec(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = _fixture_suite(project, "../../outside/secret.json")
    assert run_cli(capsys, "cases", "validate", str(suite)).code == 2
    allowed = run_cli(capsys, "cases", "validate", "--allow-outside-paths", str(suite))
    assert allowed.code == 0, allowed.err
    monkeypatch.setenv("EVALCTL_NO_TOOLS_EXEC", "1")
    allowed = run_cli(capsys, "cases", "validate", "--allow-outside-paths", str(suite))
    assert allowed.code == 0, allowed.err
    # The flag is this command's: the next one is back under the rule.
    assert run_cli(capsys, "cases", "validate", str(suite)).code == 2


def test_evalctl_toml_lets_paths_out_only_where_tools_may_run_code(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An untrusted pull request can change evalctl.toml, so under --no-tools-exec (the flag
    or EVALCTL_NO_TOOLS_EXEC) its `allow_outside_paths` counts for nothing."""
    (project / "evalctl.toml").write_text("allow_outside_paths = true\n")
    suite = _fixture_suite(project, "../../outside/secret.json")
    trusted = run_cli(capsys, "cases", "validate", str(suite))
    assert trusted.code == 0, trusted.err
    refused = run_cli(capsys, "cases", "validate", "--no-tools-exec", str(suite))
    assert refused.code == 2 and "field 'suite.tool[1].fixture'" in refused.err
    monkeypatch.setenv("EVALCTL_NO_TOOLS_EXEC", "1")
    refused = run_cli(capsys, "cases", "validate", str(suite))
    assert refused.code == 2 and "field 'suite.tool[1].fixture'" in refused.err
    assert run_cli(capsys, "cases", "list", str(suite)).code == 2


def test_the_project_is_the_git_root_else_the_evalctl_toml_directory_else_the_suite_directory(
    tmp_path: Path,
) -> None:
    """Issue 38 turned the order round (it was evalctl.toml's directory first): a monorepo's
    evals/evalctl.toml may name files elsewhere in its repository."""
    plain = tmp_path / "plain" / "cases"
    plain.mkdir(parents=True)
    assert userpaths.project_root(plain) == plain.resolve()
    (tmp_path / "plain" / "evalctl.toml").write_text("")
    assert userpaths.project_root(plain) == (tmp_path / "plain").resolve()
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "a" / "b").mkdir(parents=True)
    assert userpaths.project_root(repo / "a" / "b") == repo.resolve()
    (repo / "a" / "evalctl.toml").write_text("")
    assert userpaths.project_root(repo / "a" / "b") == repo.resolve()
    (repo / "x.json").write_text("{}")
    found = userpaths.inside_project("../../x.json", repo / "a" / "b", file="s.toml", field="f")
    assert found.resolve() == (repo / "x.json").resolve()
    # Above the repository: outside it.
    with pytest.raises(BadInputError) as info:
        userpaths.inside_project("../../../x.json", repo / "a" / "b", file="s.toml", field="f")
    assert info.value.field == "f" and info.value.file == "s.toml"


def _matrix_dir(directory: Path, cell_id: str, results: Path) -> Path:
    """A matrix directory (as downloaded from CI) whose one cell has the id given."""
    cell_dir = directory / "good"
    cell_dir.mkdir(parents=True)
    (cell_dir / "results.json").write_text(results.read_text())
    index = {
        "kind": "matrix",
        "schema_version": 1,
        "run_id": "m",
        "started_at": "2026-01-01T00:00:00+00:00",
        "cells": [{"id": cell_id, "provider": "scripted", "results": "good/results.json"}],
    }
    (directory / "matrix.json").write_text(json.dumps(index))
    return directory


@pytest.fixture
def scripted_results(tmp_path: Path, echo_suite: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    script = tmp_path / "echo-script.toml"
    script.write_text('[[cases."echo/hello"]]\ncontent = "hello"\n')
    out = tmp_path / "run"
    result = run_cli(
        capsys,
        *("run", "--provider", "scripted", "--script", str(script), "--cases", str(echo_suite)),
        *("--case", "hello", "--out", str(out), "--no-progress"),
    )
    assert result.code == 0, result.err
    return out / "results.json"


@pytest.mark.parametrize("crafted", ["../../../../victim", "/ABSOLUTE/victim", "..", ".hidden"])
def test_a_crafted_cell_id_never_names_a_file_outside_the_baselines_directory(
    tmp_path: Path, scripted_results: Path, crafted: str, capsys: pytest.CaptureFixture[str]
) -> None:
    victim = tmp_path / "victim.json"
    victim.write_text('{"name": "package.json, not to be overwritten"}')
    crafted = crafted.replace("/ABSOLUTE/victim", str(tmp_path / "victim"))
    matrix = _matrix_dir(tmp_path / "artifact" / "a" / "b", crafted, scripted_results)
    out = tmp_path / "artifact" / "a" / "b" / "baselines"
    result = run_cli(capsys, "baseline", "--from", str(matrix), "--out", str(out))
    assert result.code == 2, result.err
    assert "matrix.json" in result.err and "cells[1].id" in result.err
    assert victim.read_text() == '{"name": "package.json, not to be overwritten"}'
    assert not out.exists() or not any(out.iterdir())


def test_baseline_out_replaces_a_baseline_but_refuses_any_other_file(
    tmp_path: Path, scripted_results: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "b.json"
    first = run_cli(capsys, "baseline", "--from", str(scripted_results), "--out", str(target))
    assert first.code == 0, first.err
    again = run_cli(capsys, "baseline", "--from", str(scripted_results), "--out", str(target))
    assert again.code == 0, again.err
    package = tmp_path / "package.json"
    package.write_text('{"name": "app", "version": "1.0.0"}\n')
    other_results = tmp_path / "results-copy.json"
    other_results.write_text(scripted_results.read_text())
    notes = tmp_path / "notes.txt"
    notes.write_text("not JSON at all\n")
    for victim in (package, other_results, notes, scripted_results):
        before = victim.read_bytes()
        refused = run_cli(capsys, "baseline", "--from", str(scripted_results), "--out", str(victim))
        assert refused.code == 2, refused.err
        assert str(victim) in refused.err and "--out" in refused.err
        assert "evalctl replaces only a baseline file" in refused.err
        assert victim.read_bytes() == before
    assert os.path.isfile(target)


def test_check_name_takes_a_plain_file_name_only() -> None:
    for good in ("local", "scripted-m1", "openai-gpt-4o_mini.v2", "_x"):
        assert userpaths.check_name(good, what="cell id", file=None, field="id") == good
    for bad in ("", ".", "..", "../x", "a/b", "/etc/x", ".hidden", "-rf", "a\x00b", "x" * 201):
        with pytest.raises(BadInputError):
            userpaths.check_name(bad, what="cell id", file="m.json", field="cells[1].id")
