"""Issue 38, items 4 and 7: bounded inputs, and no traceback from any input.

YAML is bounded by its size once aliases are expanded; a row holding a lone surrogate is
refused where it is read; `--confirm`, `timeout_s`, `--timeout`, `--samples`/`--repeats` and
a baseline's counts have documented ranges, checked before any case runs; the confirmation
arithmetic gives the whole-table computation's p-values (tests/confirmstats_reference.py)
without its cost or its overflow. A 300-byte name on the command line, a long model name in
a matrix, a plugin whose register() raises any BaseException, any EVALCTL_NO_TOOLS_EXEC
value, and a FIFO or device where a file belongs all end in exit 2 naming what is wrong.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalctl import confirmstats, userfiles
from evalctl.cli.confirm_option import parse_confirm
from evalctl.confirmstats import MAX_CONFIRM_SAMPLES, Outcome
from evalctl.errors import BadInputError
from evalctl.plugin import Registry
from evalctl.results.matrix import MAX_CELL_ID, cell_id
from evalctl.userfiles import MAX_SAMPLES
from evalctl.userpaths import SAFE_NAME
from tests import confirmstats_reference as reference
from tests.cli_helpers import run_cli
from tests.conftest import REPO

SUITE = REPO / "cases" / "release-assets.toml"
SCRIPT = REPO / "cases" / "scripts" / "release-assets.perfect.toml"
LONG = "x" * 300

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


def _data_suite(directory: Path, name: str, data: str) -> Path:
    (directory / ".git").mkdir(exist_ok=True)
    (directory / name).write_text(data, encoding="utf-8")
    suite = directory / "rows.toml"
    suite.write_text(DATA_SUITE.format(data=name))
    return suite


def _child(
    cwd: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI in a child with a deadline: a read that blocked would hang the test run."""
    full = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "evalctl.cli", *args],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())  # Rich wraps long lines


# --- Item 4: YAML by expanded size -------------------------------------------------------


def test_ten_thousand_aliases_of_a_one_megabyte_string_are_refused_by_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """They passed validate (the alias limit counted values) and run died with SIGABRT."""
    aliases = ", ".join(["*big"] * 10_000)
    data = f"- word: &big {'a' * 1_000_000}\n  copies: [{aliases}]\n"
    suite = _data_suite(tmp_path, "rows.yaml", data)
    result = run_cli(capsys, "cases", "validate", str(suite))
    assert result.code == 2, result.err
    err = _one_line(result.err)
    assert "rows.yaml" in err and "once its aliases are expanded" in err
    assert "Traceback" not in result.err


def test_yaml_expanded_size_is_bounded_by_the_file_size_limit(tmp_path: Path) -> None:
    path = tmp_path / "rows.yaml"
    path.write_text(f"- word: &w {'b' * 1000}\n  more: [{', '.join(['*w'] * 200)}]\n")
    assert userfiles.read_records(path)[0].values["word"] == "b" * 1000
    userfiles.set_max_file_bytes(100_000)
    try:
        with pytest.raises(BadInputError, match="100,000 characters once its aliases"):
            userfiles.read_records(path)
    finally:
        userfiles.set_max_file_bytes(None)


# --- Item 4: lone surrogates -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "data", "row"),
    [
        ("rows.jsonl", '{"word": "hi"}\n{"word": "yo", "unused": "a\\ud800b"}\n', "line 2"),
        ("rows.yaml", '- word: hi\n- word: yo\n  unused: "\\ud800"\n', "item 2"),
        ("rows.json", '[{"word": "hi", "unused": {"deep": ["\\udfff"]}}]', "item 1"),
    ],
)
def test_a_lone_surrogate_in_an_unused_column_is_refused_naming_file_row_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, data: str, row: str
) -> None:
    suite = _data_suite(tmp_path, name, data)
    result = run_cli(capsys, "cases", "validate", str(suite))
    assert result.code == 2, result.err
    err = _one_line(result.err)
    assert name in err and row in err and "column 'unused'" in err
    assert "lone surrogate" in err


def test_a_surrogate_pair_is_a_character_and_reads(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"word": "\\ud83d\\ude00"}\n')
    assert userfiles.read_records(path)[0].values["word"] == "\U0001f600"


# --- Item 4: documented ranges, checked before any case runs -----------------------------


def _baseline(path: Path, runs: int) -> Path:
    key = "release-assets/stern"
    path.write_text(
        json.dumps(
            {
                "schema_version": 3,
                "kind": "baseline",
                "provider": "scripted",
                "model": "scripted",
                "baselines": {key: "pass"},
                "pass_counts": {key: {"passed": runs, "runs": runs}},
            }
        )
    )
    return path


def _run(capsys: pytest.CaptureFixture[str], out: Path, *extra: str) -> tuple[int, str]:
    result = run_cli(
        capsys,
        *("run", "--provider", "scripted", "--script", str(SCRIPT), "--cases", str(SUITE)),
        *("--out", str(out), "--no-progress", *extra),
    )
    return result.code, _one_line(result.err)


@pytest.mark.parametrize(
    "flags",
    [
        ("--timeout", "1e10"),
        ("--timeout", "inf"),
        ("--timeout", "nan"),
        ("--samples", str(MAX_SAMPLES + 1)),
        ("--repeats", "100000"),
    ],
)
def test_out_of_range_flags_are_bad_usage_before_any_case_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, str]
) -> None:
    out = tmp_path / "out"
    code, err = _run(capsys, out, *flags)
    assert code == 2, err
    assert flags[0] in err
    assert not out.exists()


@pytest.mark.parametrize(
    "args",
    [
        ("soak", "--timeout", "inf"),
        ("crash-test", "--timeout", "1e10"),
        ("embed", "--timeout", "1e10", "hello"),
    ],
)
def test_the_other_timeouts_have_the_same_range(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    result = run_cli(capsys, *args)
    assert result.code == 2, result.err
    assert "--timeout" in result.err and "86400" in result.err


def test_case_timeout_s_past_its_range_in_evalctl_toml_is_refused_before_any_case_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "evalctl.toml").write_text("case_timeout_s = 1e10\n")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    code, err = _run(capsys, out)
    assert code == 2, err
    assert "evalctl.toml" in err and "case_timeout_s" in err
    assert not out.exists()


def test_confirm_past_its_range_is_refused_before_any_case_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--confirm 1000000000 exited 4 after every case ran, with no results.json."""
    baseline = _baseline(tmp_path / "base.json", 5)
    out = tmp_path / "out"
    code, err = _run(capsys, out, "--baseline", str(baseline), "--confirm", "1000000000")
    assert code == 2, err
    assert "--confirm" in err and f"to {MAX_CONFIRM_SAMPLES}" in err
    assert not out.exists()


def test_confirm_range_in_words() -> None:
    assert parse_confirm(str(MAX_CONFIRM_SAMPLES)) == MAX_CONFIRM_SAMPLES
    assert parse_confirm("200") == 200 and parse_confirm("0") == 0 and parse_confirm("auto") is None
    for bad in (str(MAX_CONFIRM_SAMPLES + 1), "-1", "1e3", "9" * 5000):
        with pytest.raises(BadInputError):
            parse_confirm(bad)


def test_a_baseline_with_runs_past_the_range_is_refused_by_run_and_compare(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """runs = 100000 made run --baseline exit 4 after every case ran, and compare exit 4."""
    baseline = _baseline(tmp_path / "base.json", 100_000)
    out = tmp_path / "out"
    code, err = _run(capsys, out, "--baseline", str(baseline))
    assert code == 2, err
    assert "base.json" in err and "runs" in err
    assert not out.exists()

    code, err = _run(capsys, out)
    assert code == 0, err
    compared = run_cli(capsys, "compare", str(baseline), str(out / "results.json"))
    assert compared.code == 2, compared.err
    assert "base.json" in _one_line(compared.err) and "runs" in compared.err


@pytest.mark.parametrize(
    ("suite_line", "case_line"), [("timeout_s = inf", ""), ("", "timeout_s = 1e10")]
)
def test_timeout_s_past_its_range_is_refused_by_validate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suite_line: str, case_line: str
) -> None:
    (tmp_path / ".git").mkdir()
    suite = tmp_path / "probe.toml"
    suite.write_text(
        f'[suite]\nname = "probe"\nkind = "assert"\nsystem_prompt = "A."\n{suite_line}\n'
        f'[[case]]\nid = "one"\ninput = {{ prompt = "hi" }}\n{case_line}\n'
        '[[case.assert]]\ntype = "contains"\nvalue = "hi"\n'
    )
    result = run_cli(capsys, "cases", "validate", str(suite))
    assert result.code == 2, result.err
    err = _one_line(result.err)
    assert "probe.toml" in err and "timeout_s" in err and "86400" in err.replace(",", "")


# --- Item 4: the confirmation arithmetic -------------------------------------------------


def test_the_p_values_are_those_of_the_whole_table_computation() -> None:
    """Every outcome of small strata, against the implementation this one replaced."""
    for k, m0, r in [(1, 0, 1), (3, 0, 4), (5, 1, 4), (5, 0, 6), (4, 2, 3), (2, 3, 5), (1, 1, 8)]:
        for a in range(k + 1):
            for f in range(m0 + 1):
                for b in range(r + 1):
                    old = reference.p_value(k, a, m0, f, r, b)
                    new = confirmstats.p_value(Outcome(k, a, m0, f, r, b))
                    assert new == pytest.approx(old, rel=1e-9, abs=1e-300), (k, a, m0, f, r, b)


def test_a_clean_break_at_the_range_limits_has_its_closed_form_p_value() -> None:
    """Past n = 1,030 the float binomial terms overflowed; the module docstring's closed form
    for a clean K/K case failing every sample holds at the largest K and R allowed."""
    for k, r in [(5, 200), (MAX_SAMPLES, 200), (20, MAX_CONFIRM_SAMPLES)]:
        p = confirmstats.p_value(Outcome(k, k, 0, 0, r, 0))
        assert p == pytest.approx(confirmstats.clean_break_p(k, 0, r), rel=1e-6)
        assert 0.0 < p < 1e-10
    # Both limits at once: below a float's range (e^-955), and computed without an error.
    assert (
        confirmstats.p_value(Outcome(MAX_SAMPLES, MAX_SAMPLES, 0, 0, MAX_CONFIRM_SAMPLES, 0))
        < 1e-300
    )


def test_many_first_samples_leave_the_first_samples_out() -> None:
    """Past MAX_OUTCOME_PAIRS the first samples leave the test (valid, m0 = 0)."""
    k, m0 = 100, 100
    assert (k + 1) * (m0 + 1) > confirmstats.MAX_OUTCOME_PAIRS
    got = confirmstats.p_value(Outcome(k, k, m0, 0, 50, 0))
    assert got == confirmstats.p_value(Outcome(k, k, 0, 0, 50, 0))


# --- Item 7: names too long on the command line ------------------------------------------


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (
            ("run", "--provider", "scripted", "--script", f"{LONG}.toml", "--cases", str(SUITE)),
            "--script",
        ),
        (
            (
                "run",
                "--provider",
                "scripted",
                "--script",
                str(SCRIPT),
                "--cases",
                str(SUITE),
                "--out",
                LONG,
            ),
            "--out",
        ),
        (
            ("run", "--provider", "scripted", "--script", str(SCRIPT), "--cases", f"{LONG}.toml"),
            None,
        ),
        (("compare", f"{LONG}.json", f"{LONG}.json"), None),
        (("report", f"{LONG}.json", "--html", "page.html"), None),
        (("init", LONG), None),
    ],
    ids=["--script", "--out", "--cases", "compare", "report", "init"],
)
def test_a_300_byte_name_on_the_command_line_is_bad_input(
    tmp_path: Path, args: tuple[str, ...], field: str | None
) -> None:
    proc = _child(tmp_path, *args)
    assert proc.returncode == 2, proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    err = _one_line(proc.stderr)
    assert LONG in err and "too long" in err
    if field is not None:
        assert f"field '{field}'" in err
    assert not (tmp_path / "results").exists()


# --- Item 7: a matrix cell id from a long model name -------------------------------------


def test_a_long_model_name_gives_a_short_cell_id_with_a_hash() -> None:
    first = cell_id("scripted", "m" * 300, "plain")
    second = cell_id("scripted", "m" * 299 + "n", "plain")
    assert len(first) <= MAX_CELL_ID and SAFE_NAME.fullmatch(first)
    assert first.startswith("scripted-mmm") and first != second
    assert cell_id("scripted", "small", "plain") == "scripted-small-plain"


def test_a_matrix_with_a_300_character_model_name_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "matrix"
    result = run_cli(
        capsys,
        *("run", "--provider", "scripted", "--model", "a" * 300, "--model", "small"),
        *("--script", str(SCRIPT), "--cases", str(SUITE), "--out", str(out)),
        *("--json", "--no-progress"),
    )
    assert result.code == 0, result.err
    cells = [c["cell"] for c in json.loads(result.out)["cells"]]
    assert "scripted-small" in cells
    [long_cell] = [c for c in cells if c != "scripted-small"]
    assert len(long_cell) <= MAX_CELL_ID
    assert (out / long_cell / "results.json").is_file()


# --- Item 7: a plugin's register() raising anything --------------------------------------


@pytest.mark.parametrize(
    ("source", "words"),
    [
        (
            "def register(registry):\n    raise GeneratorExit()\n",
            "register() failed: GeneratorExit",
        ),
        (
            "class Odd(BaseException):\n    pass\n\n"
            "def register(registry):\n    raise Odd('odd')\n",
            "register() failed: Odd: odd",
        ),
        ("raise GeneratorExit('at import')\n", "cannot be imported: GeneratorExit: at import"),
    ],
    ids=["register-GeneratorExit", "register-BaseException", "import-GeneratorExit"],
)
def test_a_plugin_raising_a_base_exception_is_exit_2_naming_the_plugin(
    tmp_path: Path, source: str, words: str
) -> None:
    """It printed a raw traceback and exited 1."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "evalctl.toml").write_text('plugins = ["odd_plugin"]\n')
    (tmp_path / "odd_plugin.py").write_text(source)
    proc = _child(tmp_path, "plugins", env={"EVALCTL_HOME": str(tmp_path / "home")})
    assert proc.returncode == 2, proc.stderr
    err = _one_line(proc.stderr)
    assert "plugin 'odd_plugin'" in err and words in err
    assert "Traceback" not in proc.stderr


# --- Item 7: EVALCTL_NO_TOOLS_EXEC as documented -----------------------------------------

COMMAND_SUITE = """
[suite]
name = "probe"
kind = "assert"
system_prompt = "Answer."
tools = ["sh"]
[[suite.tool]]
name = "sh"
description = "runs code"
command = ["sh", "-c", "echo {}"]
[[case]]
id = "one"
input = { prompt = "hi" }
[[case.assert]]
type = "contains"
value = "hi"
"""


@pytest.mark.parametrize(
    ("value", "refused"),
    [
        ("1", True),
        ("2", True),
        ("yes please", True),
        ("TRUE", True),
        ("0", False),
        ("false", False),
        ("No", False),
        ("OFF", False),
        ("", False),
    ],
)
def test_no_tools_exec_is_on_for_every_value_but_the_false_ones(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    value: str,
    refused: bool,
) -> None:
    (tmp_path / ".git").mkdir()
    suite = tmp_path / "probe.toml"
    suite.write_text(COMMAND_SUITE)
    monkeypatch.setenv("EVALCTL_NO_TOOLS_EXEC", value)
    result = run_cli(capsys, "cases", "validate", str(suite))
    assert result.code == (2 if refused else 0), result.err
    if refused:
        assert "runs code" in _one_line(result.err)
        assert "not a valid boolean" not in result.err


# --- Item 7: a FIFO or a device where a file belongs -------------------------------------


@pytest.mark.parametrize(
    ("args", "what"),
    [
        (("run", "--provider", "scripted", "--script", "{fifo}", "--cases", str(SUITE)), "FIFO"),
        (
            ("run", "--provider", "scripted", "--script", "/dev/null", "--cases", str(SUITE)),
            "character device",
        ),
        (("run", "--provider", "scripted", "--script", str(SCRIPT), "--cases", "{fifo}"), "FIFO"),
        (("cases", "validate", "{fifo}"), "FIFO"),
        (("compare", "{fifo}", "{fifo}"), "FIFO"),
        (("compare", "/dev/null", "/dev/null"), "character device"),
        (("report", "{fifo}", "--html", "page.html"), "FIFO"),
    ],
    ids=[
        "--script",
        "--script-device",
        "--cases",
        "validate",
        "compare",
        "compare-device",
        "report",
    ],
)
def test_a_fifo_or_device_on_the_command_line_is_named_without_blocking(
    tmp_path: Path, args: tuple[str, ...], what: str
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    proc = _child(tmp_path, *(a.format(fifo=fifo) for a in args))
    assert proc.returncode == 2, proc.stderr
    err = _one_line(proc.stderr)
    assert what in err and "not a regular file" in err
    assert "no such file" not in err


def test_a_factory_raising_generator_exit_is_named_when_used() -> None:
    reg = Registry()

    def make() -> Any:
        raise GeneratorExit

    reg.add_kind("closer", make)
    with pytest.raises(BadInputError, match=r"kind 'closer' could not be created: GeneratorExit$"):
        reg.kind("closer")


@pytest.mark.parametrize(
    "args",
    [
        ("compare", "{good}", "{bad}"),
        ("report", "{bad}", "--markdown", "-"),
        ("baseline", "--from", "{bad}", "--out", "{base}"),
    ],
    ids=["compare", "report", "baseline"],
)
def test_a_lone_surrogate_in_a_results_file_is_bad_input_naming_where(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    """It reached the terminal (or an encoder) and ended in exit 4."""
    out = tmp_path / "out"
    assert _run(capsys, out)[0] == 0
    good = out / "results.json"
    data = json.loads(good.read_text())
    data["cases"][0]["output"] = "a\ud800b"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))  # ensure_ascii: written as the escape "\ud800"
    paths = {"good": good, "bad": bad, "base": tmp_path / "base.json"}
    result = run_cli(capsys, *(a.format(**paths) for a in args))
    assert result.code == 2, result.err
    err = _one_line(result.err)
    assert "bad.json" in err and "lone surrogate" in err and "cases[1].output" in err


def test_escaped_surrogate_pairs_in_a_results_file_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert _run(capsys, out)[0] == 0
    data = json.loads((out / "results.json").read_text())
    data["cases"][0]["output"] = "\U0001f600 and a literal \\ud800"
    (out / "results.json").write_text(json.dumps(data))
    result = run_cli(capsys, "report", str(out / "results.json"), "--markdown", "-")
    assert result.code == 0, result.err


@pytest.mark.parametrize(
    ("copies", "confirmation", "words"),
    [
        (MAX_CONFIRM_SAMPLES + 1, True, f"at most {MAX_CONFIRM_SAMPLES} a case"),
        (MAX_SAMPLES + 1, False, f"at most {MAX_SAMPLES} a case"),
    ],
)
def test_a_results_file_with_more_samples_than_the_range_is_bad_input(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    copies: int,
    confirmation: bool,
    words: str,
) -> None:
    """A hand-made file would otherwise size the gate's arithmetic."""
    out = tmp_path / "out"
    assert _run(capsys, out)[0] == 0
    good = out / "results.json"
    data = json.loads(good.read_text())
    [attempt] = data["cases"][0]["attempts"]
    data["cases"][0]["attempts"] = [{**attempt, "confirmation": confirmation}] * copies
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    result = run_cli(capsys, "compare", str(good), str(bad))
    assert result.code == 2, result.err
    err = _one_line(result.err)
    assert "bad.json" in err and words in err
