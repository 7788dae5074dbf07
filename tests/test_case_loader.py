"""The strict case loader: every malformed suite names the file, the case id and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalctl.cases.loader import load_suite, load_suites
from evalctl.errors import BadInputError, ExitCode
from tests.cli_helpers import run_cli


def _error_for(path: Path) -> BadInputError:
    with pytest.raises(BadInputError) as info:
        load_suite(path)
    assert info.value.code is ExitCode.BAD_INPUT
    assert str(path) in info.value.message
    return info.value


def test_valid_suite_loads_with_typed_input_and_expected(echo_suite: Path) -> None:
    suite = load_suite(echo_suite)
    assert suite.name == "echo"
    assert [c.key for c in suite.cases] == ["echo/hello", "echo/shout"]
    assert suite.cases[1].expected.model_dump() == {"answer": "HI", "tool": "upper"}
    # With no checks listed anywhere, a case runs every check its kind knows.
    assert suite.cases[0].checks == ["answer", "tool"]


def test_bad_toml_syntax(echo_suite: Path) -> None:
    echo_suite.write_text(echo_suite.read_text() + "\n[[case]\nid = 1\n")
    assert "invalid TOML" in _error_for(echo_suite).message


def test_unknown_key_in_a_case(echo_suite: Path) -> None:
    echo_suite.write_text(
        echo_suite.read_text().replace('id = "shout"', 'id = "shout"\nexpectd = 1')
    )
    err = _error_for(echo_suite)
    assert (err.case_id, err.field) == ("shout", "case.expectd")
    assert "unknown key" in err.message


def test_unknown_key_inside_expected_is_caught_by_the_kind(echo_suite: Path) -> None:
    echo_suite.write_text(
        echo_suite.read_text().replace('{ answer = "hello" }', '{ answer = "hello", ansewr = 1 }')
    )
    err = _error_for(echo_suite)
    assert (err.case_id, err.field) == ("hello", "case.expected.ansewr")


def test_missing_expected(echo_suite: Path) -> None:
    echo_suite.write_text(echo_suite.read_text().replace('expected = { answer = "hello" }\n', ""))
    err = _error_for(echo_suite)
    assert (err.case_id, err.field) == ("hello", "case.expected.answer")
    assert "missing" in err.message


def test_duplicate_case_id(echo_suite: Path) -> None:
    echo_suite.write_text(echo_suite.read_text().replace('id = "shout"', 'id = "hello"'))
    err = _error_for(echo_suite)
    assert (err.case_id, err.field) == ("hello", "case.id")
    assert "duplicate" in err.message


def test_wrong_type(echo_suite: Path) -> None:
    echo_suite.write_text(echo_suite.read_text().replace('features = ["basic"]', "features = 3"))
    err = _error_for(echo_suite)
    assert (err.case_id, err.field) == ("hello", "case.features")


def test_wrong_type_in_suite_table(echo_suite: Path) -> None:
    echo_suite.write_text(echo_suite.read_text().replace("max_turns = 3", 'max_turns = "three"'))
    err = _error_for(echo_suite)
    assert err.case_id is None
    assert err.field == "suite.max_turns"


def test_unknown_kind_tool_and_check(echo_suite: Path) -> None:
    original = echo_suite.read_text()
    echo_suite.write_text(original.replace('kind = "echo"', 'kind = "nope"'))
    assert _error_for(echo_suite).field == "suite.kind"
    echo_suite.write_text(original.replace('tools = ["upper"]', 'tools = ["lower"]'))
    assert _error_for(echo_suite).field == "suite.tools"
    echo_suite.write_text(original.replace('id = "hello"', 'id = "hello"\nchecks = ["answr"]'))
    err = _error_for(echo_suite)
    assert (err.case_id, err.field) == ("hello", "case.checks")


def test_filters_by_suite_and_case_glob(echo_suite: Path) -> None:
    suites = load_suites(None, echo_suite.parent, case_glob="sh*")
    assert [c.key for s in suites for c in s.cases] == ["echo/shout"]
    with pytest.raises(BadInputError) as info:
        load_suites(None, echo_suite.parent, suite_names=["missing"])
    assert "--suite" in info.value.message


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda t: t + "\n[[case]\n", "invalid TOML"),
        (lambda t: t.replace('id = "shout"', 'id = "shout"\ncolour = 1'), "'case.colour'"),
        (lambda t: t.replace('id = "shout"', 'id = "hello"'), "duplicate"),
    ],
)
def test_cli_validate_exits_2_without_traceback(
    echo_suite: Path, capsys: pytest.CaptureFixture[str], edit: object, needle: str
) -> None:
    assert callable(edit)
    echo_suite.write_text(edit(echo_suite.read_text()))
    result = run_cli(capsys, "cases", "validate", str(echo_suite))
    assert result.code == 2
    assert str(echo_suite) in result.err
    assert needle in result.err
    assert "Traceback" not in result.err + result.out


def test_cli_validate_and_list_ok(echo_suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "cases", "validate", str(echo_suite))
    assert result.code == 0
    assert "2 cases in 1 suite" in result.out
    listing = run_cli(capsys, "cases", "list", str(echo_suite), "--json")
    assert listing.code == 0
    assert '"echo/shout"' in listing.out


def test_validate_finds_what_a_kind_would_trip_over_at_run_time(tmp_path: Path, repo: Path) -> None:
    # A built-in kind's loader hook: an asset missing from its release fixture, or the
    # fixture itself missing, is found by `validate`, not by `run`.
    import shutil

    shutil.copytree(repo / "cases" / "fixtures" / "releases", tmp_path / "fixtures" / "releases")
    text = (repo / "cases" / "asset-triage.toml").read_text()
    first_asset = text.index('asset = "') + len('asset = "')
    suite = tmp_path / "asset-triage.toml"
    suite.write_text(text[:first_asset] + "renamed-" + text[first_asset:])
    err = _error_for(suite)
    assert err.field == "case.input.asset" and "not in release fixture" in err.message
    shutil.rmtree(tmp_path / "fixtures")
    with pytest.raises(BadInputError) as info:
        load_suite(suite)
    assert "case.input.release" in info.value.message
    assert "release fixture not found" in info.value.message


def test_a_reply_script_among_the_suites_is_named_as_one(
    echo_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The likely mistake (a script beside its suites) gets one line saying so, not four
    # "unknown key" lines about a file that was never meant to be a suite.
    script = echo_suite.parent / "replies.toml"
    script.write_text('[[cases."echo/hello"]]\ncontent = "hello"\n')
    result = run_cli(capsys, "cases", "validate", str(echo_suite.parent))
    assert result.code == 2
    assert result.err.count("\n") == 1, result.err
    assert f"{script}: field 'cases': this is a reply script, not a suite" in result.err
    assert "Traceback" not in result.err + result.out


def test_a_repeated_case_option_selects_every_glob(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--case a --case b` once kept only b, silently; now it means `--case a,b`.
    listing = run_cli(
        capsys, "cases", "list", str(echo_suite), "--case", "hello", "--case", "sh*", "--json"
    )
    assert listing.code == 0
    assert '"echo/hello"' in listing.out and '"echo/shout"' in listing.out
    script = tmp_path / "script.toml"
    script.write_text('[[default]]\ncontent = "x"\n')
    out = tmp_path / "out"
    run = run_cli(
        capsys, "run", "--provider", "scripted", "--script", str(script), "--cases",
        str(echo_suite), "--case", "hello", "--case", "shout", "--out", str(out), "--no-progress",
    )  # fmt: skip
    assert run.code == 0, run.err
    assert '"echo/shout"' in (out / "results.json").read_text()
    assert '"echo/hello"' in (out / "results.json").read_text()


def test_a_case_with_a_bad_key_still_has_its_assertions_checked(tmp_path: Path) -> None:
    # One validate run lists the assertion problems too, not one layer per fix.
    path = tmp_path / "s.toml"
    path.write_text(
        '[suite]\nname = "s"\nkind = "assert"\n'
        '[[case]]\nid = "a"\ninput = { prompt = "hi" }\nthreshold = 1.5\n'
        '[[case.assert]]\ntype = "regex"\npattern = "(unclosed"\n'
        '[[case.assert]]\ntype = "json_field"\n'
    )
    with pytest.raises(BadInputError) as info:
        load_suite(path)
    lines = info.value.message.splitlines()
    assert len(lines) == 3, lines
    assert "field 'case.threshold'" in lines[0]
    assert "case 'a': field 'case.assert[1].pattern': invalid regular expression" in lines[1]
    assert "case 'a': field 'case.assert[2].type': unknown assertion type 'json_field'" in lines[2]


def test_a_name_that_breaks_its_pattern_says_what_is_allowed_in_words(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text(
        '[suite]\nname = "my suite"\nkind = "assert"\n'
        '[[case]]\nid = "b/c"\ninput = { prompt = "hi" }\n'
        '[[case.assert]]\ntype = "json-valid"\n'
    )
    with pytest.raises(BadInputError) as info:
        load_suite(path)
    first, second = info.value.message.splitlines()
    assert "field 'suite.name': 'my suite' is not allowed: letters, digits," in first
    assert "case 'b/c': field 'case.id': 'b/c' is not allowed: letters, digits," in second
    assert "pattern" not in info.value.message


def test_cases_list_and_validate_take_the_cases_flag_of_run(
    echo_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `run --cases X` and `cases validate --cases X` name suites the same way.
    validate = run_cli(capsys, "cases", "validate", "--cases", str(echo_suite))
    assert validate.code == 0, validate.err
    assert "2 cases in 1 suite" in validate.out
    listing = run_cli(capsys, "cases", "list", "--cases", str(echo_suite), "--json")
    assert listing.code == 0 and '"echo/hello"' in listing.out


@pytest.mark.parametrize("command", [("cases", "list"), ("run",), ("baseline",)])
def test_suite_help_fits_every_command_that_takes_it(
    command: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    # `cases list --suite` runs nothing: the shared help must not say "to run".
    done = run_cli(capsys, *command, "--help")
    assert done.code == 0
    help_text = " ".join(done.out.replace("│", " ").split())
    assert "Only the cases of this suite (repeatable). Default: every suite." in help_text
    assert "Suite name to run" not in help_text


def test_json_error_lists_each_problem_apart(
    echo_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Several problems in one file: `message` joins them (as before), `problems` keeps
    # each with its own file, case id and field, so a program need not split lines.
    text = echo_suite.read_text().replace('id = "shout"', 'id = "shout"\ncolour = 1')
    echo_suite.write_text(text.replace('id = "hello"', 'id = "hello"\nshade = 2'))
    result = run_cli(capsys, "cases", "validate", str(echo_suite), "--json")
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert error["file"] == str(echo_suite) and error["message"].count("\n") == 1
    problems = error["problems"]
    assert [(p["file"], p["case_id"], p["field"]) for p in problems] == [
        (str(echo_suite), "hello", "case.shade"),
        (str(echo_suite), "shout", "case.colour"),
    ]
    assert all(p["message"] and str(echo_suite) not in p["message"] for p in problems)
    # One problem: one entry, the same as the top-level fields.
    echo_suite.write_text(text)
    one = json.loads(run_cli(capsys, "cases", "validate", str(echo_suite), "--json").out)
    assert [p["field"] for p in one["error"]["problems"]] == [one["error"]["field"]]
