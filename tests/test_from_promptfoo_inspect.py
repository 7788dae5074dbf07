"""docs/writing-suites.md, "From promptfoo, from Inspect": each row of its table is one test
here (named in the table's last column), run on files shaped like those tools' own, so the
table cannot claim a mapping that does not work."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evalctl.cases.loader import load_suite
from evalctl.cases.schema import Case
from evalctl.runner.matrix import plan_cells
from tests.cli_helpers import run_cli
from tests.conftest import REPO

HEAD = '[suite]\nname = "s"\nkind = "assert"\n'
NOT_SORRY = '[[suite.defaults.assert]]\ntype = "not-contains"\nvalue = "sorry"\n'


def _write(directory: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = directory / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return directory / "s.toml"


def _cases(directory: Path, files: dict[str, str]) -> list[Case]:
    return load_suite(_write(directory, files)).cases


def _run(capsys: pytest.CaptureFixture[str], out: Path, *args: str) -> dict[str, Any]:
    ran = run_cli(capsys, "run", *args, "--out", str(out), "--no-progress")
    assert ran.code == 0, ran.out + ran.err
    data: dict[str, Any] = json.loads((out / "results.json").read_text())
    return data


def _prompt(case: Case) -> Any:
    return case.input.model_dump(exclude_none=True)


def test_datasets(tmp_path: Path) -> None:
    """promptfoo `tests: file://tests.yaml`, Inspect `json_dataset`: `cases_from`."""
    cases = _cases(
        tmp_path,
        {
            "tests.yaml": "- vars: {q: a}\n  id: y1\n",
            "samples.jsonl": '{"id": "j1", "input": "b"}\n',
            "s.toml": HEAD
            + 'cases_from = ["tests.yaml", "samples.jsonl"]\n'
            + '[suite.case_template]\ninput = { prompt = "{{ vars.q if vars.q is defined else '
            + 'input }}" }\n'
            + NOT_SORRY.replace("suite.defaults", "suite.case_template"),
        },
    )
    assert [c.id for c in cases] == ["y1", "j1"]


def test_vars(tmp_path: Path) -> None:
    """A test's `vars`, a Sample's fields: the row's columns, by name or `vars[...]`."""
    (case,) = _cases(
        tmp_path,
        {
            "rows.csv": "id,topic,target audience\nt1,bananas,kids\n",
            "s.toml": HEAD + 'cases_from = "rows.csv"\n[suite.case_template]\n'
            "input = { prompt = \"{{ topic }} for {{ vars['target audience'] }}\" }\n"
            "[suite.defaults]\n" + NOT_SORRY,
        },
    )
    assert _prompt(case) == {"prompt": "bananas for kids"}
    assert case.vars == {"topic": "bananas", "target audience": "kids"}


def test_default_test(tmp_path: Path) -> None:
    """promptfoo `defaultTest`: `[suite.defaults]`, overridden by a case's own by name."""
    cases = _cases(
        tmp_path,
        {
            "s.toml": HEAD + "[suite.defaults]\nthreshold = 0.5\n" + NOT_SORRY + "[[case]]\n"
            'id = "a"\ninput = { prompt = "x" }\n'
            '[[case]]\nid = "b"\ninput = { prompt = "x" }\nthreshold = 1.0\n[[case.assert]]\n'
            'type = "not-contains"\nvalue = "oops"\nname = "not-contains:sorry"\n',
        },
    )
    assert [
        (c.threshold, [a.params.model_dump()["value"] for a in c.assertions]) for c in cases
    ] == [
        (0.5, ["sorry"]),
        (1.0, ["oops"]),
    ]


# promptfoo's `__expected`: "contains: Paris" is that assertion type, a bare value `equals`.
EXPECTED_TEMPLATE = """\
[[suite.case_template.assert]]
type = "{{ __expected.split(':', 1)[0] if ':' in __expected else 'equals' }}"
value = "{{ __expected.split(':', 1)[1] | trim if ':' in __expected else __expected }}"
"""


def test_expected_with_its_type_prefix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = _write(
        tmp_path,
        {
            "tests.csv": "question,__expected\nCapital of France?,contains: Paris\n"
            "Two plus two?,4\nSay hi,icontains: HELLO\n",
            "s.toml": HEAD + 'cases_from = "tests.csv"\nid_template = "{{ row_number }}"\n'
            '[suite.case_template]\ninput = { prompt = "{{ question }}" }\n' + EXPECTED_TEMPLATE,
        },
    )
    kinds = [
        (a.type, a.params.model_dump()["value"])
        for c in load_suite(suite).cases
        for a in c.assertions
    ]
    assert kinds == [("contains", "Paris"), ("equals", "4"), ("icontains", "HELLO")]
    script = tmp_path / "script.toml"
    script.write_text(
        '[[cases."s/1"]]\ncontent = "It is Paris."\n[[cases."s/2"]]\ncontent = "4"\n'
        '[[cases."s/3"]]\ncontent = "hello there"\n'
    )
    results = _run(
        capsys,
        tmp_path / "out",
        "--provider",
        "scripted",
        "--script",
        str(script),
        "--cases",
        str(suite),
    )
    assert [c["status"] for c in results["cases"]] == ["pass", "pass", "pass"]


def test_threshold(tmp_path: Path) -> None:
    """promptfoo `__threshold`: a typed placeholder, the row's number."""
    cases = _cases(
        tmp_path,
        {
            "tests.csv": "id,q,__threshold\na,x,0.5\nb,y,1\n",
            "s.toml": HEAD + 'cases_from = "tests.csv"\n[suite.case_template]\n'
            'input = { prompt = "{{ q }}" }\nthreshold = "{{ __threshold }}"\n'
            "[suite.defaults]\n" + NOT_SORRY,
        },
    )
    assert [c.threshold for c in cases] == [0.5, 1.0]


def test_metadata(tmp_path: Path) -> None:
    """promptfoo `__metadata:*` columns, Inspect's `metadata`: the case's `metadata`."""
    cases = _cases(
        tmp_path,
        {
            "tests.csv": "id,q,__metadata:owner\na,x,search\n",
            "samples.jsonl": '{"id": "b", "q": "y", "metadata": {"owner": "billing", "n": 2}}\n',
            "s.toml": HEAD + 'cases_from = ["tests.csv", "samples.jsonl"]\n'
            '[suite.case_template]\ninput = { prompt = "{{ q }}" }\n'
            'metadata = "{{ vars.metadata if vars.metadata is defined else '
            "{'owner': vars['__metadata:owner']} }}\"\n[suite.defaults]\n" + NOT_SORRY,
        },
    )
    assert [c.metadata for c in cases] == [{"owner": "search"}, {"owner": "billing", "n": "2"}]


SUITE = (
    HEAD
    + """cases_from = "samples.jsonl"
[suite.case_template]
input = { prompt = "{{ input }}" }
[[suite.case_template.assert]]
type = "equals"
value = "{{ target }}"
"""
)
SAMPLES = (
    '{"id": "s1", "input": "Capital of Peru?", "target": "Lima"}\n'
    '{"id": "s2", "input": "Capital of Chad?", "target": "N\'Djamena"}\n'
)


def test_echo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """promptfoo's `echo` provider: `--provider echo`, the prompt as sent is the answer."""
    suite = _write(tmp_path, {"samples.jsonl": SAMPLES, "s.toml": SUITE})
    results = _run(capsys, tmp_path / "out", "--provider", "echo", "--cases", str(suite))
    assert [c["output"] for c in results["cases"]] == ["Capital of Peru?", "Capital of Chad?"]


def test_mockllm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Inspect's `mockllm/model` with custom outputs: one `[[default]]` reply over the row."""
    suite = _write(tmp_path, {"samples.jsonl": SAMPLES, "s.toml": SUITE})
    script = tmp_path / "script.toml"
    script.write_text('[[default]]\ncontent = "{{ target }}"\n')
    results = _run(
        capsys,
        tmp_path / "out",
        "--provider",
        "scripted",
        "--script",
        str(script),
        "--cases",
        str(suite),
    )
    assert [(c["output"], c["status"]) for c in results["cases"]] == [
        ("Lima", "pass"),
        ("N'Djamena", "pass"),
    ]


def test_chat_input(tmp_path: Path) -> None:
    """Inspect's chat `input` (a list of messages): `input = { messages = "{{ input }}" }`."""
    (case,) = _cases(
        tmp_path,
        {
            "samples.jsonl": json.dumps(
                {
                    "id": "c1",
                    "input": [
                        {"role": "user", "content": "Hi"},
                        {"role": "assistant", "content": "Hello."},
                        {"role": "user", "content": "Be terse."},
                    ],
                }
            )
            + "\n",
            "s.toml": HEAD + 'cases_from = "samples.jsonl"\n[suite.case_template]\n'
            'input = { messages = "{{ input }}" }\n[suite.defaults]\n' + NOT_SORRY,
        },
    )
    assert _prompt(case) == {
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "Be terse."},
        ]
    }


def test_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Inspect's `--limit N`, promptfoo's `--filter-first-n N`: `run --limit N`."""
    suite = _write(tmp_path, {"samples.jsonl": SAMPLES, "s.toml": SUITE})
    results = _run(
        capsys, tmp_path / "out", "--provider", "echo", "--cases", str(suite), "--limit", "1"
    )
    assert [c["id"] for c in results["cases"]] == ["s1"]


def test_auto_ids(tmp_path: Path) -> None:
    """Inspect numbers samples without ids; promptfoo has none: `row_number`, or `slug`."""
    files = {"qa.csv": "question\nWhat's 2 + 2?\nWho wrote Hamlet?\n"}
    numbered = _cases(
        tmp_path,
        {
            **files,
            "s.toml": HEAD + 'cases_from = "qa.csv"\nid_template = "{{ row_number }}"\n'
            '[suite.case_template]\ninput = { prompt = "{{ question }}" }\n[suite.defaults]\n'
            + NOT_SORRY,
        },
    )
    assert [c.id for c in numbered] == ["1", "2"]
    slugged = _cases(
        tmp_path,
        {
            **files,
            "s.toml": HEAD + 'cases_from = "qa.csv"\n'
            'id_template = "{{ question | slug }}"\n'
            '[suite.case_template]\ninput = { prompt = "{{ question }}" }\n[suite.defaults]\n'
            + NOT_SORRY,
        },
    )
    assert [c.id for c in slugged] == ["what-s-2-2", "who-wrote-hamlet"]


def test_prompt_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """promptfoo `prompts: [file://prompt.txt, ...]`: `prompt_file`, and `[matrix] prompts`
    entries `{ file = ... }` over the row's values."""
    _write(
        tmp_path,
        {
            "prompt.txt": "Q: {{ input }}\n",
            "terse.txt": "{{ input }} One word.\n",
            "samples.jsonl": SAMPLES,
            "s.toml": HEAD + 'cases_from = "samples.jsonl"\nprompt_file = "prompt.txt"\n'
            "[suite.defaults]\n" + NOT_SORRY,
            "evalctl.toml": '[matrix]\nproviders = ["echo"]\n'
            'prompts = { plain = "{{ prompt }}", terse = { file = "terse.txt" } }\n',
        },
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    ran = run_cli(capsys, "run", "--cases", "s.toml", "--out", "out", "--no-progress")
    assert ran.code == 0, ran.out + ran.err
    answers = {
        cell: [
            c["output"]
            for c in json.loads((tmp_path / "out" / cell / "results.json").read_text())["cases"]
        ]
        for cell in ("echo-plain", "echo-terse")
    }
    assert answers == {
        "echo-plain": ["Q: Capital of Peru?", "Q: Capital of Chad?"],
        "echo-terse": ["Capital of Peru? One word.", "Capital of Chad? One word."],
    }


def test_providers_and_prompts_matrix() -> None:
    """`providers: [a, b]` and `prompts: [p1, p2]`: the matrix's cells."""
    cells = plan_cells(["echo", "scripted"], [], {"p1": "{{ prompt }}", "p2": "Hi {{ name }}"})
    assert [c.id for c in cells] == ["echo-p1", "echo-p2", "scripted-p1", "scripted-p2"]


def test_llm_rubric_and_tool_choice(tmp_path: Path) -> None:
    """`llm-rubric`, `model_graded_qa()`: `type = "judge"`; a forced tool: `tool_choice`."""
    (case,) = _cases(
        tmp_path,
        {
            "s.toml": HEAD + 'tools = ["lookup"]\ntool_choice = "lookup"\ntemperature = 0\n'
            '[[suite.tool]]\nname = "lookup"\ndescription = "Look up."\nmock = { ok = true }\n'
            '[[case]]\nid = "a"\ninput = { prompt = "x" }\n'
            '[[case.assert]]\ntype = "judge"\nrubric = "Polite."\n',
        },
    )
    assert [a.type for a in case.assertions] == ["judge"]


def test_the_table_names_a_test_here_for_every_row() -> None:
    doc = (REPO / "docs" / "writing-suites.md").read_text()
    section = doc.split("### From promptfoo, from Inspect", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    named = [re.findall(r"`(test_\w+)`", row) for row in rows[1:]]
    assert all(named), [row for row, names in zip(rows[1:], named, strict=True) if not names]
    here = set(globals())
    missing = sorted({name for names in named for name in names} - here)
    assert not missing
    # Every concept the issue named has its row.
    for concept in (
        "vars",
        "defaultTest",
        "__expected",
        "__threshold",
        "__metadata",
        "echo",
        "mockllm",
        "chat",
        "--limit",
        "ids",
        "prompts",
    ):
        assert concept in section, concept


PROMPTFOO_CSV = """\
question,__expected
What is the capital of France?,contains: Paris
What is 2 + 2?,4
Which planet is known as the red planet?,icontains: MARS
Who wrote Hamlet?,contains: Shakespeare
"""

# The all-correct stand-in: one reply, over the row, for every case.
ANSWER = "{{ __expected.split(':', 1)[1] | trim if ':' in __expected else __expected }}"


def test_a_promptfoo_suite_moves_over_whole_and_a_planted_regression_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's "done when", on a promptfoo-shaped CSV used as it is: ids from the row,
    prompt variants from a file over row values, one templated [[default]] reply, --limit,
    and compare (the default gate) naming the case a planted regression broke."""
    _write(
        tmp_path,
        {
            "tests.csv": PROMPTFOO_CSV,
            "s.toml": HEAD + 'cases_from = "tests.csv"\n'
            'id_template = "{{ row_number }}-{{ question | slug }}"\n'
            '[suite.case_template]\ninput = { prompt = "{{ question }}" }\n' + EXPECTED_TEMPLATE,
            "prompts.txt": "Answer in a few words: {{ question }}\n",
            "evalctl.toml": '[matrix]\nproviders = ["scripted"]\n'
            'prompts = { plain = "{{ prompt }}", short = { file = "prompts.txt" } }\n',
            "good.toml": f"[[default]]\ncontent = {json.dumps(ANSWER)}\n",
            "bad.toml": "[[default]]\ncontent = "
            + json.dumps("{{ 'Venus' if 'planet' in question else " + ANSWER[3:-3] + " }}")
            + "\n",
        },
    )
    monkeypatch.chdir(tmp_path)
    for out, script in (("first", "good.toml"), ("second", "bad.toml")):
        (tmp_path / out).mkdir()
        ran = run_cli(
            capsys,
            *("run", "--provider", "scripted", "--script", script, "--cases", "s.toml"),
            *("--limit", "3", "--out", out, "--no-progress"),
        )
        assert ran.code == 0, ran.out + ran.err
        assert "prompt variants from [matrix]" in ran.err
    first = json.loads((tmp_path / "first" / "scripted-short" / "results.json").read_text())
    assert [(c["id"], c["status"]) for c in first["cases"]] == [
        ("1-what-is-the-capital-of-france", "pass"),
        ("2-what-is-2-2", "pass"),
        ("3-which-planet-is-known-as-the-red-planet", "pass"),
    ]
    sent = first["cases"][0]["transcript"][0]["sent"][-1]["content"]
    assert sent == "Answer in a few words: What is the capital of France?"
    made = run_cli(capsys, "baseline", "--from", "first", "--out", "baselines")
    assert made.code == 0, made.out + made.err
    gated = run_cli(capsys, "compare", "baselines", "second")
    assert gated.code == 1, gated.out + gated.err
    said = gated.out + gated.err
    assert "s/3-which-planet-is-known-as-the-red-planet" in said
    assert "cell scripted-plain" in said and "cell scripted-short" in said
