"""Templates with a budget (issue 29): a `{{ var }}` template that would run for hours or build
gigabytes is refused by `cases validate` and `run` alike, exit 2 naming file, case and field;
the budget (`template_time_s`, `template_max_chars`) is set in evalctl.toml; templates within
it render as before."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalctl import template_budget
from evalctl.cases.loader import load_suite
from evalctl.cases.template import Renderer
from evalctl.config import load_settings
from evalctl.errors import BadInputError, ExitCode
from tests.cli_helpers import run_cli


@pytest.fixture(autouse=True)
def default_budget() -> Iterator[None]:
    template_budget.configure()
    yield
    template_budget.configure()


def _suite(root: Path, prompt: str, rows: list[dict[str, str]] | None = None) -> Path:
    """An assert suite whose case template's prompt is `prompt`, over `rows` (one by
    default) in a JSONL data file."""
    (root / "data").mkdir(parents=True, exist_ok=True)
    rows = rows or [{"id": "only", "ticket": "hello"}]
    (root / "data" / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    suite = root / "budget.toml"
    suite.write_text(
        '[suite]\nname = "budget"\nkind = "assert"\ncases_from = "data/rows.jsonl"\n\n'
        f"[suite.case_template]\ninput = {{ prompt = {json.dumps(prompt)} }}\n"
        '[[suite.case_template.assert]]\ntype = "contains"\nvalue = "ok"\n'
    )
    return suite


# Each would hang `validate` or exhaust its memory without the budget.
SIZE_PROBES = {
    "lipsum": "{{ lipsum(1000000) }}",
    "center filter": "{{ ticket | center(1000000000) }}",
    "ljust method": "{{ ticket.ljust(999999999) }}",
    "percent width": "{{ '%9999999999s' % ticket }}",
    "format width": "{{ '{:>999999999}'.format(ticket) }}",
    "format filter": "{{ '%999999999s' | format(ticket) }}",
    "replace explodes": "{% set s = 'a' * 1000000 %}{{ s.replace('a', 'aaaaaaaaaa' * 50) }}",
    "replace filter": "{% set s = 'a' * 1000000 %}{{ s | replace('a', 'a' * 500) }}",
    "join builds 500M": "{% set big = 'x' * 1000000 %}{{ ([big] * 500) | join }}",
    "join method": "{% set big = 'x' * 1000000 %}{{ ''.join([big] * 500) }}",
    "loop outputs 500M": (
        "{% set big = 'x' * 1000000 %}{% for i in range(500) %}{{ big }}{% endfor %}"
    ),
    "loop captured": (
        "{% set big = 'x' * 999999 %}{% set out %}{% for i in range(500) %}{{ big }}"
        "{% endfor %}{% endset %}{{ out | length }}"
    ),
    "loop doubles with ~": (
        "{% set ns = namespace(s='a') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}"
        "{% endfor %}{{ ns.s | length }}"
    ),
    "loop doubles with +": (
        "{% set ns = namespace(s='a') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}"
        "{% endfor %}{{ ns.s | length }}"
    ),
    "huge power": "{{ ((10 ** 1000) ** 1000) ** 1000 }}",
    "expandtabs": "{{ ('\\t' * 1000000).expandtabs(1000000) }}",
    "indent": "{{ ('\\n' * 100000) | indent(1000000) }}",
    "batch": "{{ [1] | batch(1000000000, 'x') | list | length }}",
    "a list printed": "{% set big = 'x' * 1000000 %}{{ [big] * 1000 }}",
    "a list joined with ~": "{% set big = 'x' * 1000000 %}{{ ([big] * 1000) ~ '' }}",
    "a list as json": "{% set big = 'x' * 1000000 %}{{ ([big] * 1000) | tojson }}",
    "json indent": "{{ range(1000) | list | tojson(indent=1000000) }}",
    "wordwrap's wrapstring": "{{ ticket | wordwrap(1, wrapstring='y' * 1000000) }}",
    "many format fields": "{{ ('{0}' * 300000).format('x' * 1000) }}",
    "many % fields": "{{ ('%s' * 300000) % (('x' * 1000,) * 300000) }}",
}


@pytest.mark.parametrize("template", SIZE_PROBES.values(), ids=SIZE_PROBES.keys())
def test_a_template_past_the_size_budget_is_refused_naming_file_case_and_field(
    tmp_path: Path, template: str
) -> None:
    suite = _suite(tmp_path, template)
    with pytest.raises(BadInputError) as info:
        load_suite(suite)
    error = info.value
    assert error.file == str(suite)
    assert error.case_id == "only"
    assert error.field == "suite.case_template.input.prompt"
    assert "not allowed in a template" in error.message
    assert any(why in error.message for why in ("template_max_chars", "lipsum", "bits"))


TIME_PROBES = {
    "nested range": (
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    ),
    "nested over one range": (
        "{% set r = range(100000) %}{% for i in r %}{% for j in r %}{% endfor %}{% endfor %}"
    ),
    "macro recursion": (
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}"
    ),
}


@pytest.mark.parametrize("template", TIME_PROBES.values(), ids=TIME_PROBES.keys())
def test_a_template_past_the_time_budget_is_refused(tmp_path: Path, template: str) -> None:
    (tmp_path / "evalctl.toml").write_text("template_time_s = 0.2\n")
    load_settings(tmp_path)
    suite = _suite(tmp_path, template)
    with pytest.raises(BadInputError) as info:
        load_suite(suite)
    assert info.value.field == "suite.case_template.input.prompt"
    assert "ran past its 0.2 s budget (template_time_s in evalctl.toml)" in info.value.message


# Each would take minutes to compile, or crash the compiler, before any render starts.
COMPILE_PROBES = {
    "100,000 placeholders": "{{ ticket }}" * 100_000,
    "a 100,000-item list": "x {{ [" + "ticket, " * 100_000 + "ticket] | length }}",
    "a typed 100,000-item list": "{{ [" + "ticket, " * 100_000 + "ticket] | length }}",
    "30,000 items in few characters": "x {{ [" + "a," * 30_000 + "a] | length }}",
    "deep parentheses": "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}",
    "deep ifs": "{% if 1 %}" * 3000 + "x" + "{% endif %}" * 3000,
    "deep fors": "{% for i in [1] %}" * 200 + "x" + "{% endfor %}" * 200,
    "a long filter chain": "x {{ ticket" + " | upper" * 20_000 + " }}",
}


@pytest.mark.parametrize("template", COMPILE_PROBES.values(), ids=COMPILE_PROBES.keys())
def test_a_template_too_large_or_deep_to_compile_is_a_syntax_error(
    tmp_path: Path, template: str
) -> None:
    suite = _suite(tmp_path, template)
    with pytest.raises(BadInputError) as info:
        load_suite(suite)
    assert info.value.case_id == "only"
    assert info.value.field == "suite.case_template.input.prompt"
    assert "template syntax error" in info.value.message
    assert any(why in info.value.message for why in ("a template may hold", "nested too deeply"))


def test_plain_placeholders_are_held_to_the_output_budget_too(tmp_path: Path) -> None:
    """`{{ name }}` placeholders over text are filled without Jinja; their output is
    counted the same: a 1,000-character cell 5,000 times is 5 million characters."""
    suite = _suite(tmp_path, "{{ ticket }}" * 5000, [{"id": "only", "ticket": "x" * 1000}])
    with pytest.raises(BadInputError) as info:
        load_suite(suite)
    assert "its output passed 1,000,000 characters" in info.value.message


def test_validate_and_run_exit_2_naming_the_row_that_explodes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One row of many asks for a billion-character width: that row's case is named."""
    monkeypatch.chdir(tmp_path)
    rows = [
        {"id": "fine", "ticket": "hello", "width": "20"},
        {"id": "wide", "ticket": "hello", "width": "1000000000"},
    ]
    suite = _suite(tmp_path, "Ticket: {{ ticket | center(width | int) }}", rows)
    checked = run_cli(capsys, "cases", "validate", str(suite))
    assert checked.code == ExitCode.BAD_INPUT, checked.err
    assert "case 'wide'" in checked.err and "case 'fine'" not in checked.err
    assert "suite.case_template.input.prompt" in checked.err
    assert "template_max_chars in evalctl.toml" in checked.err
    (tmp_path / "script.toml").write_text('[[default]]\ncontent = "ok"\n')
    ran = run_cli(
        capsys,
        "run",
        *("--provider", "scripted", "--script", "script.toml", "--cases", str(suite)),
        *("--out", "out", "--no-progress"),
    )
    assert ran.code == ExitCode.BAD_INPUT, ran.err
    assert "case 'wide'" in ran.err
    assert not (tmp_path / "out" / "results.json").exists()


def test_the_budget_is_set_in_evalctl_toml(tmp_path: Path) -> None:
    template = "{% for i in range(30) %}{{ ticket }}{% endfor %}"  # 150 characters
    suite = _suite(tmp_path / "suite", template)
    assert load_suite(suite).cases[0].input.prompt == "hello" * 30  # type: ignore[attr-defined]
    (tmp_path / "evalctl.toml").write_text("template_max_chars = 100\n")
    load_settings(tmp_path)
    with pytest.raises(BadInputError) as info:
        load_suite(suite)
    assert "output passed 100 characters" in info.value.message
    (tmp_path / "evalctl.toml").write_text("template_max_chars = 0\n")
    with pytest.raises(BadInputError) as bad:
        load_settings(tmp_path)
    assert bad.value.field == "template_max_chars"


def test_templates_within_the_budget_render_as_before() -> None:
    renderer = Renderer()
    variables = {"tags": "a,b,c", "name": "Ann", "n": 3, "items": [1, 2]}
    cases = {
        "{% for t in tags.split(',') %}{{ t | upper }}{% if not loop.last %}, {% endif %}"
        "{% endfor %}": "A, B, C",
        "{% for i in range(n) %}{{ loop.index }}/{{ loop.length }} {% endfor %}": "1/3 2/3 3/3 ",
        "{{ '%-5s|' % name }}{{ '{:>4}'.format(n) }}": "Ann  |   3",
        "{{ name ~ '!' ~ n }} {{ name | center(7) }}.": "Ann!3   Ann  .",
        "{{ items | join('-') }} {{ [[1], [2, 3]] | sum(start=[]) }}": "1-2 [1, 2, 3]",
        "{% set out %}{{ name }}{% endset %}[{{ out | replace('n', 'N') }}]": "[ANN]",
        "{{ 'x' * 3 + 'y' }} {{ 2 ** 10 }}": "xxxy 1024",
    }
    for template, expected in cases.items():
        assert renderer.render(template, variables) == (expected, []), template
    # A typed placeholder keeps its type under the budget too.
    assert renderer.render("{{ n * 2 }}", variables) == (6, [])
