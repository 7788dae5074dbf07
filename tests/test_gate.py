"""`evalctl gate`: quality-job decisions from git diff, on a throwaway repository."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from evalctl.ci_tiers import changed_files, decide, matches
from evalctl.config import GateSettings
from tests.cli_helpers import run_cli


def git(repo: Path, *args: str) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60
    )
    return proc.stdout


def write(repo: Path, path: str, text: str = "x\n") -> None:
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository whose `main` holds a case file, engine code and docs; HEAD is a branch."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.invalid")
    git(root, "config", "user.name", "test")
    git(root, "config", "commit.gpgsign", "false")
    for path in ("cases/sommelier.toml", "evalctl/server/engine.py", "docs/guide.md", "README.md"):
        write(root, path)
    commit(root, "base")
    git(root, "checkout", "-q", "-b", "feature")
    monkeypatch.chdir(root)
    return root


def gate_json(capsys: pytest.CaptureFixture[str], ref: str = "main") -> dict[str, object]:
    result = run_cli(capsys, "gate", "--changed-from", ref, "--json")
    assert result.code == 0, result.err
    data: dict[str, object] = json.loads(result.out)
    return data


def groups(data: dict[str, object]) -> dict[str, list[str]]:
    return {m["group"]: m["files"] for m in data["matches"]}  # type: ignore[attr-defined,index]


def test_docs_only_change_skips_the_quality_job(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(repo, "docs/guide.md", "better words\n")
    commit(repo, "docs")
    data = gate_json(capsys)
    assert data["run"] is False
    assert data["changed"] == ["docs/guide.md"]
    assert "none of the 1 changed files" in str(data["reason"])


def test_case_and_engine_changes_run_it_and_say_why(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(repo, "cases/sommelier.toml", "changed\n")
    write(repo, "evalctl/server/engine.py", "changed\n")
    write(repo, "README.md", "changed\n")
    commit(repo, "quality-relevant")
    data = gate_json(capsys)
    assert data["run"] is True
    assert groups(data) == {
        "cases": ["cases/sommelier.toml"],
        "engine": ["evalctl/server/engine.py"],
    }
    assert data["reason"] == "2 changed files touch cases, engine"

    text = run_cli(capsys, "gate", "--changed-from", "main")
    assert text.out.splitlines()[0] == "run=true"
    assert "cases/sommelier.toml" in text.out


def test_uncommitted_and_untracked_files_count(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(repo, "baselines/local.json", "{}\n")  # untracked
    assert groups(gate_json(capsys)) == {"baselines": ["baselines/local.json"]}
    commit(repo, "baseline")
    write(repo, "evalctl/tools/catalog.py", "staged\n")
    git(repo, "add", "evalctl/tools/catalog.py")
    write(repo, "cases/sommelier.toml", "unstaged edit\n")
    assert set(groups(gate_json(capsys))) == {"baselines", "tools", "cases"}


def test_moving_a_case_file_away_counts_as_a_case_change(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git(repo, "mv", "cases/sommelier.toml", "docs/sommelier.toml")
    commit(repo, "move")
    assert groups(gate_json(capsys)) == {"cases": ["cases/sommelier.toml"]}


def test_changes_that_landed_on_the_base_do_not_count(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    git(repo, "checkout", "-q", "main")
    write(repo, "cases/sommelier.toml", "someone else's change\n")
    commit(repo, "on main")
    git(repo, "checkout", "-q", "feature")
    data = gate_json(capsys)
    assert data["run"] is False
    assert data["changed"] == []
    assert data["reason"] == "nothing changed since main"


def test_globs_come_from_evalctl_toml(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(repo, "evalctl.toml", '[gate]\ncases = ["golden/**/*.toml"]\nconfig = []\n')
    commit(repo, "config")
    write(repo, "cases/sommelier.toml", "no longer watched\n")
    assert gate_json(capsys)["run"] is False
    write(repo, "golden/deep/er/x.toml")
    assert groups(gate_json(capsys)) == {"cases": ["golden/deep/er/x.toml"]}


def test_github_output_gets_the_decision(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = repo.parent / "github_output"
    out.write_text("earlier=1\n")
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    gate_json(capsys)
    write(repo, "cases/new.toml")
    gate_json(capsys)
    assert out.read_text() == "earlier=1\nquality=false\nquality=true\n"


def test_unknown_ref_and_no_repository_are_usage_errors(
    repo: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    unknown = run_cli(capsys, "gate", "--changed-from", "no-such-branch")
    assert unknown.code == 2
    assert "no-such-branch" in unknown.err
    outside = repo.parent / "plain"
    outside.mkdir()
    monkeypatch.chdir(outside)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(repo.parent))
    refused = run_cli(capsys, "gate", "--changed-from", "main")
    assert refused.code == 2
    assert "not inside a git repository" in refused.err


def test_changed_files_from_a_subdirectory_are_repository_paths(repo: Path) -> None:
    write(repo, "cases/sub/new.toml")
    assert changed_files("main", repo / "cases") == ["cases/sub/new.toml"]


@pytest.mark.parametrize(
    ("path", "pattern", "expected"),
    [
        ("cases/a.toml", "cases/**", True),
        ("cases/fixtures/deep/w.json", "cases/**", True),
        ("casesx/a.toml", "cases/**", False),
        ("cases/a.toml", "cases/*.toml", True),
        ("cases/sub/a.toml", "cases/*.toml", False),  # * stays within a directory
        ("a.toml", "**/*.toml", True),  # **/ also matches no directory at all
        ("x/y/a.toml", "**/*.toml", True),
        ("evalctl/providers/local.py", "evalctl/providers/local.py", True),
        ("evalctl/providers/local_py", "evalctl/providers/local.py", False),  # . is literal
        ("run1.log", "run[0-9].log", True),
        ("runx.log", "run[!0-9].log", True),
        ("run1.log", "run[!0-9].log", False),
        ("a/b", "a?b", False),
    ],
)
def test_glob_semantics(path: str, pattern: str, expected: bool) -> None:
    assert matches(path, pattern) is expected


def test_default_groups_cover_the_quality_paths() -> None:
    decision = decide(
        ["cases/x.toml", "evalctl/suites/sommelier/kind.py", "evalctl/cli/run.py"],
        GateSettings(),
        "main",
    )
    assert {m.group: m.files for m in decision.matches} == {
        "prompts": ["evalctl/suites/sommelier/kind.py"],
        "cases": ["cases/x.toml"],
    }
