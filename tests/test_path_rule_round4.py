"""One path rule for every file a suite names (issue 38, deliver 2 and the path parts of 7):
`prompt_file` at every level, `[matrix]` prompt files, `names_from` (`file` and `sqlite`),
`cases_from` and `fixture`; applied to the name a data-file row filled in; never into `.git/`;
NUL bytes and over-long names refused with exit 2 naming the file, case and field; a suite
that is a symlink out of its cases folder's project refused by `cases validate` and `run`;
and the project is the git root, so a monorepo's evals/ may read data/ with confinement on.
Real directories, real symlinks, the real CLI, under EVALCTL_NO_TOOLS_EXEC."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from evalctl import userpaths
from evalctl.errors import BadInputError
from tests.cli_helpers import run_cli

SECRET = "s3cr3t-outside-the-project"
ASSERT = '[[suite.defaults.assert]]\ntype = "not-contains"\nvalue = "sorry"\n'
NAMES_PATTERN = "'\\[WINE:\\d+\\]\\s*\\n([^\\n]+)'"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository (its `.git` marks the project) with cases/, the working directory, under
    no-tools-exec; beside it, outside, files holding a secret; inside, .git/config with a
    token as actions/checkout leaves it."""
    root = tmp_path / "project"
    (root / "cases").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text(f"[http]\n\textraheader = AUTHORIZATION: {SECRET}\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (outside / "names.json").write_text(json.dumps([SECRET]))
    with sqlite3.connect(outside / "secret.db") as db:
        db.execute("CREATE TABLE wines (name TEXT)")
        db.execute("INSERT INTO wines VALUES (?)", (SECRET,))
    db.close()
    monkeypatch.chdir(root)
    monkeypatch.setenv("EVALCTL_NO_TOOLS_EXEC", "1")
    return root


def _ways_out(project: Path, name: str) -> dict[str, str]:
    """Ways to name the outside file `name` from cases/: absolute, `..` out, a symlink out."""
    target = project.parent / "outside" / name
    link = project / "cases" / f"link-{name}"
    if not link.is_symlink():
        link.symlink_to(target)
    return {"absolute": str(target), "dotdot": f"../../outside/{name}", "symlink": link.name}


def _validate(capsys: pytest.CaptureFixture[str], suite: Path) -> tuple[int, str]:
    result = run_cli(capsys, "cases", "validate", str(suite))
    assert SECRET not in result.out + result.err
    return result.code, result.err


def _prompt_suite(project: Path, level: str, name: str) -> Path:
    """A suite whose prompt file is `name`, given at `level`."""
    head = '[suite]\nname = "p"\nkind = "assert"\n'
    if level == "suite":
        text = head + f'prompt_file = "{name}"\n[suite.defaults]\n{ASSERT}[[case]]\nid = "a"\n'
    elif level == "case":
        text = head + f'[suite.defaults]\n{ASSERT}[[case]]\nid = "a"\nprompt_file = "{name}"\n'
    else:  # the case template, over a row
        (project / "cases" / "rows.csv").write_text("id,q\na,x\n")
        text = (
            head + 'cases_from = "rows.csv"\n[suite.case_template]\n'
            f'prompt_file = "{name}"\n[suite.defaults]\n{ASSERT}'
        )
    path = project / "cases" / "p.toml"
    path.write_text(text)
    return path


FIELDS = {
    "suite": "suite.prompt_file",
    "case": "case.prompt_file",
    "template": "suite.case_template.prompt_file",
}


@pytest.mark.parametrize("level", sorted(FIELDS))
@pytest.mark.parametrize("way", ["absolute", "dotdot", "symlink"])
def test_a_prompt_file_outside_the_project_is_refused_at_every_level(
    project: Path, level: str, way: str, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _prompt_suite(project, level, _ways_out(project, "secret.txt")[way])
    code, err = _validate(capsys, suite)
    assert code == 2, err
    assert str(suite) in err and "case 'a'" in err and f"field '{FIELDS[level]}'" in err
    words = {"absolute": "absolute path", "dotdot": "with '..'", "symlink": "through a symlink"}
    assert words[way] in err


def test_a_row_cannot_build_a_prompt_path_out_of_the_project(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The suite's text names no file outside; the row's value does, once filled in."""
    (project / "cases" / "rows.csv").write_text("id,which\nok,p\nbad,../../outside/secret\n")
    (project / "cases" / "p.txt").write_text("hello")
    suite = project / "cases" / "rows.toml"
    suite.write_text(
        '[suite]\nname = "rows"\nkind = "assert"\ncases_from = "rows.csv"\n'
        '[suite.case_template]\nprompt_file = "{{ which }}.txt"\n[suite.defaults]\n' + ASSERT
    )
    code, err = _validate(capsys, suite)
    assert code == 2, err
    assert "case 'bad'" in err and "field 'suite.case_template.prompt_file'" in err
    assert "case 'ok'" not in err


def test_run_reads_no_prompt_file_outside_and_writes_no_results(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _prompt_suite(project, "case", "../../outside/secret.txt")
    out = project / "out"
    result = run_cli(
        capsys,
        *("run", "--provider", "echo", "--cases", str(suite), "--out", str(out), "--no-progress"),
    )
    assert result.code == 2, result.err
    assert "field 'case.prompt_file'" in result.err
    assert SECRET not in result.out + result.err
    assert not (out / "results.json").exists()


def test_a_matrix_prompt_file_outside_the_project_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "cases" / "t.toml").write_text(
        '[suite]\nname = "t"\nkind = "assert"\n[suite.defaults]\n'
        + ASSERT
        + '[[case]]\nid = "a"\ninput = { prompt = "hi" }\n'
    )
    (project / "evalctl.toml").write_text(
        '[matrix]\nproviders = ["echo"]\nprompts = { leak = { file = "../outside/secret.txt" } }\n'
    )
    out = project / "out"
    result = run_cli(capsys, "run", "--cases", "cases/t.toml", "--out", str(out), "--no-progress")
    assert result.code == 2, result.err
    assert "matrix.prompts.leak" in result.err and "out of the project" in result.err
    assert SECRET not in result.out + result.err
    assert not out.exists()


def _names_suite(project: Path, names_from: str) -> Path:
    path = project / "cases" / "wines.toml"
    path.write_text(
        '[suite]\nname = "wines"\nkind = "assert"\n[[case]]\nid = "c1"\n'
        'input = { prompt = "?" }\n[[case.assert]]\ntype = "names-in"\n'
        f"pattern = {NAMES_PATTERN}\nnames_from = {names_from}\n"
    )
    return path


@pytest.mark.parametrize("key", ["file", "sqlite"])
@pytest.mark.parametrize("way", ["absolute", "dotdot", "symlink"])
def test_names_from_outside_the_project_is_refused(
    project: Path, key: str, way: str, capsys: pytest.CaptureFixture[str]
) -> None:
    target = "names.json" if key == "file" else "secret.db"
    name = _ways_out(project, target)[way]
    query = ', query = "SELECT name FROM wines"' if key == "sqlite" else ""
    suite = _names_suite(project, f'{{ {key} = "{name}"{query} }}')
    code, err = _validate(capsys, suite)
    assert code == 2, err
    assert "case 'c1'" in err and f"field 'case.assert[1].names_from.{key}'" in err


def test_a_row_cannot_build_a_names_from_path_out_of_the_project(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "cases" / "rows.jsonl").write_text('{"id": "r1", "db": "../../outside/secret.db"}\n')
    suite = project / "cases" / "rows.toml"
    suite.write_text(
        '[suite]\nname = "rows"\nkind = "assert"\ncases_from = "rows.jsonl"\n'
        '[suite.case_template]\ninput = { prompt = "?" }\n'
        '[[suite.case_template.assert]]\ntype = "names-in"\n'
        f"pattern = {NAMES_PATTERN}\n"
        'names_from = { sqlite = "{{ db }}", query = "SELECT name FROM wines" }\n'
    )
    code, err = _validate(capsys, suite)
    assert code == 2, err
    assert "case 'r1'" in err and "names_from.sqlite" in err and "out of the project" in err


FIELD_OF = {
    "fixture": "suite.tool[1].fixture",
    "cases_from": "suite.cases_from",
    "prompt_file": "case.prompt_file",
    "names_from": "case.assert[1].names_from.file",
}


def _suite_naming(project: Path, where: str, name: str) -> Path:
    """A suite naming `name` (a TOML basic string's content) at `where`."""
    path = project / "cases" / "s.toml"
    if where == "fixture":
        text = (
            '[suite]\nname = "s"\nkind = "assert"\ntools = ["lookup"]\n[[suite.tool]]\n'
            f'name = "lookup"\ndescription = "d"\nfixture = "{name}"\nkey = "k"\n'
            'parameters = { type = "object", properties = { k = { type = "string" } } }\n'
            '[[case]]\nid = "a"\ninput = { prompt = "hi" }\n'
            '[[case.assert]]\ntype = "contains"\nvalue = "hi"\n'
        )
    elif where == "cases_from":
        text = (
            f'[suite]\nname = "s"\nkind = "assert"\ncases_from = "{name}"\n'
            '[suite.case_template]\ninput = { prompt = "hi" }\n[suite.defaults]\n' + ASSERT
        )
    elif where == "prompt_file":
        text = (
            '[suite]\nname = "s"\nkind = "assert"\n[suite.defaults]\n'
            f'{ASSERT}[[case]]\nid = "a"\nprompt_file = "{name}"\n'
        )
    else:
        return _names_suite(project, f'{{ file = "{name}" }}')
    path.write_text(text)
    return path


@pytest.mark.parametrize("where", sorted(FIELD_OF))
@pytest.mark.parametrize("bad", ["nul", "long-name", "long-path", "into-git"])
def test_nul_bytes_long_names_and_git_are_exit_2_naming_the_field(
    project: Path, where: str, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name = {
        "nul": "data\\u0000.json",
        "long-name": "x" * 300 + ".json",
        "long-path": "/".join(["d" * 200] * 25),
        "into-git": "../.git/config",
    }[bad]
    suite = _suite_naming(project, where, name)
    code, err = _validate(capsys, suite)
    assert code == 2, err
    assert str(suite) in err and f"field '{FIELD_OF[where]}'" in err
    words = {
        "nul": "NUL byte",
        "long-name": "a file or directory name may have at most 255",
        "long-path": "a path may have at most 4095",
        "into-git": ".git directory",
    }
    assert words[bad] in err
    assert "Traceback" not in err and "internal error" not in err


def test_git_stays_out_of_reach_whatever_the_opt_ins(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A symlink into .git is refused as well, and --allow-outside-paths does not open it."""
    monkeypatch.delenv("EVALCTL_NO_TOOLS_EXEC")
    (project / "cases" / "cfg.txt").symlink_to(project / ".git" / "config")
    suite = _suite_naming(project, "prompt_file", "cfg.txt")
    result = run_cli(capsys, "cases", "validate", "--allow-outside-paths", str(suite))
    assert result.code == 2, result.err
    assert ".git directory" in result.err and SECRET not in result.out + result.err


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_suite_symlinked_out_of_the_cases_folder_is_refused_not_skipped(
    project: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "cases" / "ok.toml").write_text(
        '[suite]\nname = "ok"\nkind = "assert"\n[suite.defaults]\n'
        + ASSERT
        + '[[case]]\nid = "a"\ninput = { prompt = "hi" }\n'
    )
    elsewhere = project.parent / "outside" / "evil.toml"
    elsewhere.write_text(
        '[suite]\nname = "evil"\nkind = "assert"\nprompt_file = "secret.txt"\n'
        "[suite.defaults]\n" + ASSERT + '[[case]]\nid = "leak"\n'
    )
    (project / "cases" / "evil.toml").symlink_to(elsewhere)
    out = project / "out"
    args = (
        ["cases", "validate", "cases"]
        if command == "validate"
        else ["run", "--provider", "echo", "--cases", "cases", "--out", str(out), "--no-progress"]
    )
    result = run_cli(capsys, *args)
    assert result.code == 2, result.out + result.err
    assert "evil.toml" in result.err and "symlink leading out of the project" in result.err
    assert SECRET not in result.out + result.err
    assert not (out / "results.json").exists()
    # A symlink that stays inside the project is a suite like any other.
    (project / "cases" / "evil.toml").unlink()
    (project / "shared").mkdir()
    (project / "shared" / "more.toml").write_text(
        (project / "cases" / "ok.toml").read_text().replace('"ok"', '"more"')
    )
    (project / "cases" / "more.toml").symlink_to(project / "shared" / "more.toml")
    result = run_cli(capsys, "cases", "validate", "cases")
    assert result.code == 0, result.err
    assert "2 suites" in result.out


def test_a_monorepo_evals_folder_reads_data_elsewhere_in_its_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """evals/evalctl.toml no longer fences the project in: the repository is the project, so
    data/golden.csv is in reach with confinement on, and what lies above the repository is
    not."""
    repo = tmp_path / "mono"
    (repo / ".git").mkdir(parents=True)
    (repo / "data").mkdir()
    (repo / "data" / "golden.csv").write_text("id,q\ng1,hello\n")
    (repo / "evals" / "cases").mkdir(parents=True)
    (repo / "evals" / "evalctl.toml").write_text('cases_dir = "cases"\n')
    suite = repo / "evals" / "cases" / "golden.toml"
    suite.write_text(
        '[suite]\nname = "golden"\nkind = "assert"\ncases_from = "../../data/golden.csv"\n'
        '[suite.case_template]\ninput = { prompt = "{{ q }}" }\n[suite.defaults]\n' + ASSERT
    )
    monkeypatch.chdir(repo / "evals")
    monkeypatch.setenv("EVALCTL_NO_TOOLS_EXEC", "1")
    result = run_cli(capsys, "cases", "validate", "cases")
    assert result.code == 0, result.err
    assert "ok 1 case" in result.out
    assert userpaths.project_root(repo / "evals" / "cases") == repo.resolve()
    (tmp_path / "above.csv").write_text("id,q\na1,x\n")
    with pytest.raises(BadInputError):
        userpaths.inside_project(
            "../../../above.csv", repo / "evals" / "cases", file=suite, field="suite.cases_from"
        )


def test_a_symlink_loop_is_refused_as_bad_input(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "cases" / "loop-a").symlink_to(project / "cases" / "loop-b")
    (project / "cases" / "loop-b").symlink_to(project / "cases" / "loop-a")
    suite = _suite_naming(project, "prompt_file", "loop-a")
    code, err = _validate(capsys, suite)
    assert code == 2, err
    assert "field 'case.prompt_file'" in err and "Traceback" not in err
