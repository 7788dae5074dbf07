"""Prompts from files and over row values (issue 31): `prompt_file` in `[suite]`,
`[suite.case_template]` or a case; `[matrix] prompts` entries from files and naming row
values; `--provider`/`--model` never dropping the matrix's prompt variants."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalctl.cases.loader import load_suite
from evalctl.errors import BadInputError
from tests.cli_helpers import run_cli

ASSERT = '[[suite.defaults.assert]]\ntype = "not-contains"\nvalue = "sorry"\n'


def _prompts(path: Path) -> dict[str, Any]:
    return {c.id: c.input.model_dump(exclude_none=True) for c in load_suite(path).cases}


def test_a_suite_prompt_file_is_the_prompt_of_every_row_without_input(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "ask.txt").write_text("Translate to {{ language }}: {{ text }}\n")
    (tmp_path / "rows.csv").write_text("id,language,text\nfr,French,hello\nde,German,bye\n")
    path = tmp_path / "s.toml"
    path.write_text(
        '[suite]\nname = "s"\nkind = "assert"\ncases_from = "rows.csv"\n'
        'prompt_file = "prompts/ask.txt"\n'
        "[suite.defaults]\n" + ASSERT
    )
    # No case template at all: the file is each row's prompt, its last line break dropped.
    assert _prompts(path) == {
        "fr": {"prompt": "Translate to French: hello"},
        "de": {"prompt": "Translate to German: bye"},
    }


def test_a_case_with_its_own_input_keeps_it(tmp_path: Path) -> None:
    (tmp_path / "p.txt").write_text("from the file")
    path = tmp_path / "s.toml"
    path.write_text(
        '[suite]\nname = "s"\nkind = "assert"\nprompt_file = "p.txt"\n'
        "[suite.defaults]\n" + ASSERT + '[[case]]\nid = "own"\ninput = { prompt = "mine" }\n'
        '[[case]]\nid = "filed"\n'
    )
    assert _prompts(path) == {"own": {"prompt": "mine"}, "filed": {"prompt": "from the file"}}


def test_a_template_prompt_file_may_be_chosen_by_the_row(tmp_path: Path) -> None:
    for kind in ("short", "long"):
        (tmp_path / f"{kind}.txt").write_text(f"{kind}: {{{{ q }}}}")
    (tmp_path / "rows.jsonl").write_text(
        '{"id": "a", "kind": "short", "q": "x"}\n{"id": "b", "kind": "long", "q": "y"}\n'
    )
    path = tmp_path / "s.toml"
    path.write_text(
        '[suite]\nname = "s"\nkind = "assert"\ncases_from = "rows.jsonl"\n'
        '[suite.case_template]\nprompt_file = "{{ kind }}.txt"\n'
        "[suite.defaults]\n" + ASSERT
    )
    assert _prompts(path) == {"a": {"prompt": "short: x"}, "b": {"prompt": "long: y"}}


def test_a_case_prompt_file_and_its_errors(tmp_path: Path) -> None:
    (tmp_path / "p.txt").write_text("{{ missing }}")
    path = tmp_path / "s.toml"
    path.write_text(
        '[suite]\nname = "s"\nkind = "assert"\n[suite.defaults]\n' + ASSERT + "[[case]]\n"
        'id = "a"\nprompt_file = "p.txt"\n'
        '[[case]]\nid = "b"\nprompt_file = "nope.txt"\n'
        '[[case]]\nid = "c"\nprompt_file = "p.txt"\ninput = { prompt = "twice" }\n'
    )
    with pytest.raises(BadInputError) as info:
        load_suite(path)
    text = str(info.value)
    assert "case 'a'" in text and "'missing' is undefined" in text and "case.prompt_file" in text
    assert "case 'b'" in text and "nope.txt" in text
    assert "case 'c'" in text and "give the prompt once" in text


MATRIX_SUITE = """\
[suite]
name = "t"
kind = "assert"
cases_from = "rows.csv"
[suite.case_template]
input = { prompt = "{{ topic }}" }
[suite.defaults]
[[suite.defaults.assert]]
type = "not-contains"
value = "sorry"
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "rows.csv").write_text("id,topic,audience\nt1,bananas,kids\nt2,tides,sailors\n")
    (tmp_path / "t.toml").write_text(MATRIX_SUITE)
    (tmp_path / "prompts.txt").write_text("Write a tweet about {{ topic }} for {{ audience }}.\n")
    (tmp_path / "evalctl.toml").write_text(
        '[matrix]\nproviders = ["echo"]\n'
        'prompts = { plain = "{{ prompt }}", tweet = { file = "prompts.txt" } }\n'
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _outputs(results: Path) -> dict[str, str]:
    data = json.loads(results.read_text())
    return {c["id"]: c["output"] for c in data["cases"]}


def test_matrix_variants_come_from_files_and_use_row_values(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = project / "out"
    out.mkdir()
    ran = run_cli(capsys, "run", "--cases", "t.toml", "--out", str(out), "--no-progress")
    assert ran.code == 0, ran.out + ran.err
    assert _outputs(out / "echo-plain" / "results.json") == {"t1": "bananas", "t2": "tides"}
    assert _outputs(out / "echo-tweet" / "results.json") == {
        "t1": "Write a tweet about bananas for kids.",
        "t2": "Write a tweet about tides for sailors.",
    }
    # The prompt as sent is in the transcript's first turn.
    tweet = json.loads((out / "echo-tweet" / "results.json").read_text())
    assert tweet["cases"][0]["transcript"][0]["sent"][-1]["content"] == (
        "Write a tweet about bananas for kids."
    )


def test_a_provider_flag_keeps_the_matrix_s_variants_and_says_so(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = project / "out"
    out.mkdir()
    ran = run_cli(
        capsys,
        *("run", "--provider", "echo", "--model", "m", "--cases", "t.toml"),
        *("--out", str(out), "--no-progress"),
    )
    assert ran.code == 0, ran.out + ran.err
    assert "prompt variants from [matrix]" in ran.err and "plain, tweet" in ran.err
    index = json.loads((out / "matrix.json").read_text())
    assert [c["id"] for c in index["cells"]] == ["echo-m-plain", "echo-m-tweet"]


def test_a_variant_naming_a_value_no_case_has_is_exit_2_before_any_cell(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "prompts.txt").write_text("About {{ topik }}")
    out = project / "out"
    ran = run_cli(capsys, "run", "--cases", "t.toml", "--out", str(out), "--no-progress")
    assert ran.code == 2, ran.out + ran.err
    assert "matrix.prompts.tweet" in ran.err and "topik" in ran.err
    assert not out.exists()


def test_a_missing_variant_file_is_exit_2_naming_it(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "prompts.txt").unlink()
    ran = run_cli(capsys, "run", "--cases", "t.toml", "--no-progress")
    assert ran.code == 2
    assert "matrix.prompts.tweet" in ran.err and "prompts.txt" in ran.err


def test_evalctl_toml_beside_the_suites_is_found_when_the_working_directory_has_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "rows.csv").write_text("id,topic,audience\nt1,bananas,kids\n")
    (project / "t.toml").write_text(MATRIX_SUITE)
    (project / "evalctl.toml").write_text(
        '[matrix]\nproviders = ["echo"]\nprompts = { tweet = "Tweet: {{ topic }}" }\n'
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    out = tmp_path / "out"
    out.mkdir()
    suite = str(project / "t.toml")
    ran = run_cli(capsys, "run", "--cases", suite, "--out", str(out), "--no-progress")
    assert ran.code == 0, ran.out + ran.err
    assert _outputs(out / "echo-tweet" / "results.json") == {"t1": "Tweet: bananas"}
    listed = run_cli(capsys, "cases", "validate", suite)
    assert listed.code == 0, listed.out + listed.err
    # The working directory's own evalctl.toml wins: one rule, the working directory first.
    (elsewhere / "evalctl.toml").write_text("")
    plain = tmp_path / "plain"
    ran = run_cli(
        capsys, "run", "--provider", "echo", "--cases", suite, "--out", str(plain), "--no-progress"
    )
    assert ran.code == 0, ran.out + ran.err
    assert _outputs(plain / "results.json") == {"t1": "bananas"}
