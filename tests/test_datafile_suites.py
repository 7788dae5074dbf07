"""Cases from data files (`cases_from`), `[suite.case_template]` and `[suite.defaults]`:
rows become cases with stable ids, placeholders are filled strictly, and every mistake is
exit 2 naming the file and the row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalctl.cases.loader import load_suite
from evalctl.errors import BadInputError, ExitCode
from tests.cli_helpers import run_cli

# The example of issue 22, verbatim: it must validate and run exactly as written.
ISSUE_EXAMPLE = """\
[suite]
name = "tickets"
kind = "assert"
cases_from = "data/tickets.csv"        # columns: id, ticket, expected

[suite.case_template]
input = { prompt = "Classify this ticket: {{ ticket }}" }
[[suite.case_template.assert]]
type = "contains"
value = "{{ expected }}"

[suite.defaults]
[[suite.defaults.assert]]
type = "not-contains"
value = "I cannot"
"""

TICKETS_CSV = """\
id,ticket,expected
inv-1,"My invoice is wrong, please fix it",billing
app-2,The app crashes on start,bug
"""


@pytest.fixture
def tickets(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "tickets.csv").write_text(TICKETS_CSV)
    suite = tmp_path / "tickets.toml"
    suite.write_text(ISSUE_EXAMPLE)
    return suite


def _error(path: Path) -> BadInputError:
    with pytest.raises(BadInputError) as info:
        load_suite(path)
    assert info.value.code is ExitCode.BAD_INPUT
    return info.value


def _suite(tmp_path: Path, body: str, name: str = "s.toml") -> Path:
    path = tmp_path / name
    path.write_text(body)
    return path


HEAD = '[suite]\nname = "s"\nkind = "assert"\n'


def test_the_issue_example_loads_each_row_as_a_case(tickets: Path) -> None:
    suite = load_suite(tickets)
    assert [c.id for c in suite.cases] == ["inv-1", "app-2"]
    first = suite.cases[0]
    assert first.input.model_dump()["prompt"] == (
        "Classify this ticket: My invoice is wrong, please fix it"
    )
    assert first.vars == {"ticket": "My invoice is wrong, please fix it", "expected": "billing"}
    # The template's assertion, then the default one.
    assert [(a.type, a.params.model_dump()["value"]) for a in first.assertions] == [
        ("contains", "billing"),
        ("not-contains", "I cannot"),
    ]


def test_the_issue_example_validates_and_runs_on_the_scripted_provider(
    tickets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ok = run_cli(capsys, "cases", "validate", str(tickets))
    assert ok.code == 0, ok.out + ok.err
    assert "2 cases in 1 suite" in ok.out
    script = tmp_path / "script.toml"
    script.write_text(
        '[[cases."tickets/inv-1"]]\ncontent = "billing"\n'
        '[[cases."tickets/app-2"]]\ncontent = "I cannot say: bug"\n'
    )
    out = tmp_path / "out"
    ran = run_cli(
        capsys,
        "run",
        "--provider",
        "scripted",
        "--script",
        str(script),
        "--cases",
        str(tickets),
        "--out",
        str(out),
    )
    assert ran.code == 0, ran.out + ran.err
    results = json.loads((out / "results.json").read_text())
    statuses = {c["id"]: c["status"] for c in results["cases"]}
    # app-2 contains its expected "bug" but trips the default not-contains.
    assert statuses == {"inv-1": "pass", "app-2": "fail"}


def test_inline_cases_still_work_beside_the_rows(tickets: Path) -> None:
    tickets.write_text(
        ISSUE_EXAMPLE
        + '\n[[case]]\nid = "inline"\ninput = { prompt = "hi" }\n'
        + '[[case.assert]]\ntype = "contains"\nvalue = "hello"\n'
    )
    suite = load_suite(tickets)
    assert [c.id for c in suite.cases] == ["inline", "inv-1", "app-2"]
    # Defaults reach inline cases too.
    assert [a.type for a in suite.cases[0].assertions] == ["contains", "not-contains"]


def test_an_inline_case_with_vars_is_filled_from_the_template(tickets: Path) -> None:
    tickets.write_text(
        ISSUE_EXAMPLE + '\n[[case]]\nid = "extra"\nvars = { ticket = "Refund?", expected = "x" }\n'
    )
    case = load_suite(tickets).cases[0]
    assert case.input.model_dump()["prompt"] == "Classify this ticket: Refund?"
    assert case.vars == {"ticket": "Refund?", "expected": "x"}


def test_a_leftover_placeholder_is_an_error_naming_the_case(tmp_path: Path) -> None:
    # The bug: `{{expected}}` copied from another tool validated as a literal string.
    path = _suite(
        tmp_path,
        HEAD + '[[case]]\nid = "a"\ninput = { prompt = "hi" }\n'
        '[[case.assert]]\ntype = "contains"\nvalue = "{{expected}}"\n',
    )
    err = _error(path)
    assert (err.case_id, err.field) == ("a", "case.assert[1].value")
    assert "'expected' is undefined" in err.message


def test_an_undefined_var_in_the_template_names_the_row(tickets: Path) -> None:
    (tickets.parent / "data" / "tickets.csv").write_text("id,ticket\nt1,hello\n")
    err = _error(tickets)
    assert (err.case_id, err.field) == ("t1", "suite.case_template.assert[1].value")
    assert "'expected' is undefined" in err.message
    assert "tickets.csv line 2" in err.message


def test_a_row_that_fails_validation_names_its_line(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text("id,q\nok,fine\nbad id,oops\n")
    path = _suite(
        tmp_path,
        HEAD + 'cases_from = "rows.csv"\n[suite.case_template]\ninput = { prompt = "{{ q }}" }\n'
        '[[suite.case_template.assert]]\ntype = "contains"\nvalue = "x"\n',
    )
    err = _error(path)
    assert err.field == "case.id"
    assert "rows.csv line 3" in err.message


def test_duplicate_ids_name_both_rows(tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("id,q\nx,1\ny,2\n")
    (tmp_path / "b.jsonl").write_text('{"id": "z", "q": "3"}\n\n{"id": "x", "q": "4"}\n')
    path = _suite(
        tmp_path,
        HEAD + 'cases_from = ["a.csv", "b.jsonl"]\n'
        '[suite.case_template]\ninput = { prompt = "{{ q }}" }\n'
        '[[suite.case_template.assert]]\ntype = "contains"\nvalue = "{{ q }}"\n',
    )
    err = _error(path)
    assert (err.case_id, err.field) == ("x", "case.id")
    assert "duplicate case id" in err.message
    assert "a.csv line 2" in err.message
    assert "b.jsonl line 3" in err.message


def test_rows_without_ids_need_an_id_template(tmp_path: Path) -> None:
    (tmp_path / "rows.json").write_text(json.dumps([{"n": 7, "q": "seven"}]))
    body = (
        'cases_from = "rows.json"\n[suite.case_template]\ninput = { prompt = "{{ q }}" }\n'
        '[[suite.case_template.assert]]\ntype = "contains"\nvalue = "{{ n }}"\n'
    )
    err = _error(_suite(tmp_path, HEAD + body))
    assert err.file is not None and err.file.endswith("rows.json")
    assert "id_template" in err.message
    path = _suite(tmp_path, HEAD + 'id_template = "n-{{ n }}"\n' + body)
    case = load_suite(path).cases[0]
    assert case.id == "n-7"
    assert case.vars == {"n": 7, "q": "seven"}  # JSON keeps the values' types
    assert case.assertions[0].params.model_dump()["value"] == "7"


def test_toml_rows_are_row_tables(tmp_path: Path) -> None:
    (tmp_path / "rows.toml").write_text('[[row]]\nid = 1\nq = "one"\n')
    path = _suite(
        tmp_path,
        HEAD + 'cases_from = "rows.toml"\n[suite.case_template]\ninput = { prompt = "{{ q }}" }\n'
        '[[suite.case_template.assert]]\ntype = "contains"\nvalue = "one"\n',
    )
    assert [c.id for c in load_suite(path).cases] == ["1"]


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("missing.csv", None, "no such data file"),
        ("rows.xlsx", "x", "unsupported data file type"),
        ("rows.csv", "id,q\nx,1,2\n", "line 2: 3 fields where the header has 2"),
        ("rows.csv", "id,id\nx,1\n", "column 'id' appears twice"),
        ("rows.csv", 'id,q\nx,"open\n', "invalid CSV"),
        ("rows.jsonl", '{"id": "x"}\n{"id": \n', "line 2: invalid JSON"),
        ("rows.json", '{"id": "x"}', "array of objects"),
        ("rows.json", '["x"]', "item 1: must be an object"),
        ("rows.toml", 'x = 1\n[[row]]\nid = "a"\n', "[[row]] tables and nothing else"),
    ],
)
def test_a_bad_data_file_is_exit_2_naming_the_file(
    tmp_path: Path, name: str, content: str | None, words: str
) -> None:
    if content is not None:
        (tmp_path / name).write_text(content)
    path = _suite(
        tmp_path,
        HEAD + f'cases_from = "{name}"\n[suite.case_template]\ninput = {{ prompt = "q" }}\n',
    )
    err = _error(path)
    assert err.file == str(tmp_path / name)
    assert words in err.message


def test_defaults_give_settings_and_a_case_overrides_by_name(tmp_path: Path) -> None:
    path = _suite(
        tmp_path,
        HEAD + "[suite.defaults]\nthreshold = 0.5\ntimeout_s = 9\n"
        '[[suite.defaults.assert]]\ntype = "contains"\nname = "polite"\nvalue = "please"\n'
        '[[suite.defaults.assert]]\ntype = "not-contains"\nvalue = "sorry"\n'
        '[[case]]\nid = "own"\nthreshold = 1\ninput = { prompt = "hi" }\n'
        '[[case.assert]]\ntype = "contains"\nname = "polite"\nvalue = "thanks"\n'
        '[[case]]\nid = "plain"\ninput = { prompt = "hi" }\n',
    )
    own, plain = load_suite(path).cases
    assert (own.threshold, own.timeout_s) == (1.0, 9.0)
    assert [(a.name, a.params.model_dump()["value"]) for a in own.assertions] == [
        ("polite", "thanks"),
        ("not-contains:sorry", "sorry"),
    ]
    assert plain.threshold == 0.5
    assert [a.name for a in plain.assertions] == ["polite", "not-contains:sorry"]


def test_a_broken_default_is_reported_once_not_per_case(tmp_path: Path) -> None:
    cases = "".join(f'[[case]]\nid = "c{n}"\ninput = {{ prompt = "hi" }}\n' for n in range(5))
    path = _suite(
        tmp_path,
        HEAD + '[suite.defaults]\n[[suite.defaults.assert]]\ntype = "contains"\n' + cases,
    )
    err = _error(path)
    assert err.field == "suite.defaults.assert[1].value"
    assert err.message.count("suite.defaults.assert[1].value") == 1


def test_unknown_keys_in_template_and_defaults_are_errors(tmp_path: Path) -> None:
    path = _suite(
        tmp_path,
        HEAD + 'cases_from = "r.csv"\n[suite.case_template]\ninptu = {}\n'
        "[suite.defaults]\nid = 'x'\n",
    )
    (tmp_path / "r.csv").write_text("id\na\n")
    err = _error(path)
    fields = {e.field for e in getattr(err, "errors", [err])}
    assert {"suite.case_template.inptu", "suite.defaults.id"} <= fields


def test_the_sandbox_refuses_python_internals_and_huge_repetitions(tmp_path: Path) -> None:
    path = _suite(
        tmp_path,
        HEAD + '[[case]]\nid = "a"\ninput = { prompt = "{{ vars.__class__.__mro__ }}" }\n'
        'vars = { q = 1 }\n[[case.assert]]\ntype = "contains"\nvalue = "{{ \'x\' * 10**9 }}"\n',
    )
    err = _error(path)
    found = {e.field: e.message for e in getattr(err, "errors", [err])}
    assert "__class__" in found["case.input.prompt"]
    assert "not allowed in a template" in found["case.input.prompt"]
    assert "not allowed in a template" in found["case.assert[1].value"]


def test_a_column_whose_name_is_not_a_python_name_is_reached_through_vars(
    tmp_path: Path,
) -> None:
    (tmp_path / "r.csv").write_text("id,ticket text\na,hello\n")
    path = _suite(
        tmp_path,
        HEAD + 'cases_from = "r.csv"\n[suite.case_template]\n'
        "input = { prompt = \"{{ vars['ticket text'] }} ({{ id }})\" }\n"
        '[[suite.case_template.assert]]\ntype = "contains"\nvalue = "x"\n',
    )
    assert load_suite(path).cases[0].input.model_dump()["prompt"] == "hello (a)"


def test_a_template_syntax_error_names_the_field(tmp_path: Path) -> None:
    path = _suite(tmp_path, HEAD + '[[case]]\nid = "a"\ninput = { prompt = "{{ q " }\n')
    err = _error(path)
    assert (err.case_id, err.field) == ("a", "case.input.prompt")
    assert "template syntax error" in err.message


def test_a_data_file_with_only_a_header_leaves_the_suite_without_cases(tmp_path: Path) -> None:
    (tmp_path / "r.csv").write_text("id,q\n")
    path = _suite(tmp_path, HEAD + 'cases_from = "r.csv"\n')
    err = _error(path)
    assert err.field == "case"
    assert "cases_from" in err.message


FUZZ = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
cells = st.text(max_size=12)
csv_texts = (
    st.lists(st.lists(cells, min_size=1, max_size=4), max_size=5).map(
        lambda rows: "\n".join(",".join(row) for row in [["id", "q"], *rows])
    )
    | st.text()
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=10,
)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".json", ".toml"])
@FUZZ
@given(data=st.data())
def test_any_data_file_loads_or_is_bad_input_never_a_crash(
    tmp_path: Path, suffix: str, data: st.DataObject
) -> None:
    if suffix == ".csv":
        text = data.draw(csv_texts)
    elif suffix == ".jsonl":
        text = "\n".join(json.dumps(v) for v in data.draw(st.lists(json_values, max_size=4)))
    elif suffix == ".json":
        text = json.dumps(data.draw(json_values))
    else:
        text = data.draw(st.text())
    (tmp_path / f"rows{suffix}").write_text(text)
    path = _suite(
        tmp_path,
        HEAD + f'cases_from = "rows{suffix}"\n[suite.case_template]\n'
        'input = { prompt = "{{ q }}" }\n[[suite.case_template.assert]]\ntype = "contains"\n'
        'value = "{{ id }}"\n',
    )
    try:
        suite = load_suite(path)
    except BadInputError as exc:
        assert exc.code is ExitCode.BAD_INPUT
    else:
        assert suite.cases


def test_a_toml_data_file_among_the_suites_is_named_as_such(tmp_path: Path) -> None:
    path = _suite(tmp_path, '[[row]]\nid = "a"\n', name="rows.toml")
    err = _error(path)
    assert err.field == "row"
    assert "data file" in err.message and "data/ subdirectory" in err.message
