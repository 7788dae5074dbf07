"""Per-row case fields and YAML data files (issue 31): `metadata` and `features` as template
keys of `[suite.case_template]`, and `.yaml`/`.yml` rows beside CSV, JSONL, JSON and TOML."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalctl.cases.loader import load_suite
from evalctl.errors import BadInputError
from evalctl.userfiles import MAX_YAML_VALUES, read_records

ASSERT = '[[suite.defaults.assert]]\ntype = "not-contains"\nvalue = "sorry"\n'


def _suite(tmp_path: Path, data_file: str, template: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(
        f'[suite]\nname = "s"\nkind = "assert"\ncases_from = "{data_file}"\n'
        f"[suite.case_template]\n{template}\n[suite.defaults]\n{ASSERT}"
    )
    return path


def test_metadata_and_features_come_from_the_row(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text(
        "id,q,__metadata:owner,__metadata:priority,tag\na,x,search,1,smoke\nb,y,billing,2,full\n"
    )
    path = _suite(
        tmp_path,
        "rows.csv",
        'input = { prompt = "{{ q }}" }\n'
        "metadata = { owner = \"{{ vars['__metadata:owner'] }}\", "
        "priority = \"{{ vars['__metadata:priority'] }}\" }\n"
        'features = ["{{ tag }}", "rows"]',
    )
    cases = {c.id: c for c in load_suite(path).cases}
    assert cases["a"].metadata == {"owner": "search", "priority": "1"}
    assert cases["b"].features == ["full", "rows"]


def test_a_whole_row_table_is_the_metadata_and_numbers_become_text(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").write_text(
        '{"id": "a", "q": "x", "meta": {"owner": "search", "priority": 1, "hot": true}, '
        '"tags": ["smoke", "fast"]}\n'
    )
    path = _suite(
        tmp_path,
        "rows.jsonl",
        'input = { prompt = "{{ q }}" }\nmetadata = "{{ meta }}"\nfeatures = "{{ tags }}"',
    )
    (case,) = load_suite(path).cases
    # Labels are text, as `--meta priority=1` names them.
    assert case.metadata == {"owner": "search", "priority": "1", "hot": "true"}
    assert case.features == ["smoke", "fast"]


YAML_ROWS = """\
- id: paris
  question: "Capital of France?"
  answer: Paris
  tags: [geo, easy]
  when: 2024-05-01
- id: lima
  question: Capital of Peru?
  answer: Lima
  tags: [geo]
  when: 2024-05-02
"""


@pytest.mark.parametrize("suffix", [".yaml", ".yml"])
def test_yaml_rows_are_cases_with_their_types(tmp_path: Path, suffix: str) -> None:
    (tmp_path / f"rows{suffix}").write_text(YAML_ROWS)
    path = _suite(
        tmp_path, f"rows{suffix}", 'input = { prompt = "{{ question }}" }\nfeatures = "{{ tags }}"'
    )
    cases = load_suite(path).cases
    assert [c.id for c in cases] == ["paris", "lima"]
    assert cases[0].features == ["geo", "easy"]
    # A date is its ISO text: rows hold JSON's types only.
    assert cases[0].vars["when"] == "2024-05-01"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id: a\n", "a list of mappings"),
        ("- [1, 2]\n", "item 1: must be an object"),
        ("- id: a\n  q: [unclosed\n", "invalid YAML"),
        ("- !!python/object:os.system {}\n", "invalid YAML"),
        ("- id: a\n  blob: !!binary aGVsbG8=\n", "binary"),
    ],
)
def test_a_bad_yaml_file_is_bad_input_naming_it(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "rows.yaml"
    path.write_text(text)
    with pytest.raises(BadInputError) as info:
        read_records(path)
    assert message in str(info.value)
    assert info.value.file == str(path)


def test_yaml_aliases_cannot_expand_without_bound(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    for i in range(1, 9):
        refs = ", ".join([f"*a{i - 1}"] * 10)
        lines.append(f"a{i}: &a{i} [{refs}]")
    path = tmp_path / "rows.yaml"
    path.write_text("- " + "\n  ".join(lines) + "\n")
    with pytest.raises(BadInputError, match=f"{MAX_YAML_VALUES:,}"):
        read_records(path)
