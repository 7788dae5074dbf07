"""Every read of a user file is bounded (issue 29): a device, FIFO or socket is refused
before it is read (a FIFO never blocks `validate`), a file over the size limit is refused
naming the file and the limit, and the smaller items: a JSONL value holding U+2028 or U+0085
reads, and `run --timeout` below or at 0 is bad usage (exit 2)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from evalctl import userfiles
from evalctl.cases.loader import load_suite
from evalctl.errors import BadInputError
from tests.cli_helpers import run_cli
from tests.conftest import REPO

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


def _suite(directory: Path, data: str) -> Path:
    (directory / ".git").mkdir(exist_ok=True)  # the project: this directory
    path = directory / "rows.toml"
    path.write_text(DATA_SUITE.format(data=data))
    return path


def _validate_in_child(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`evalctl cases validate` in a child with a deadline: a read that blocks would
    otherwise hang the test run itself."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "evalctl.cli", "cases", "validate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_fifo_as_a_data_file_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "rows.csv")
    suite = _suite(tmp_path, "rows.csv")
    proc = _validate_in_child(tmp_path, str(suite))
    assert proc.returncode == 2, proc.stderr
    assert "rows.csv" in proc.stderr and "FIFO" in proc.stderr
    assert "not a regular file" in proc.stderr


def test_a_device_as_a_fixture_is_refused_before_it_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """/dev/zero once read until memory ran out. It is outside any project, so only with
    --allow-outside-paths does the read itself get to refuse it."""
    (tmp_path / ".git").mkdir()
    suite = tmp_path / "probe.toml"
    suite.write_text(
        '[suite]\nname = "probe"\nkind = "assert"\nsystem_prompt = "A."\ntools = ["t"]\n'
        '[[suite.tool]]\nname = "t"\ndescription = "d"\nfixture = "/dev/zero"\nkey = "k"\n'
        '[[case]]\nid = "one"\ninput = { prompt = "hi" }\n'
        '[[case.assert]]\ntype = "contains"\nvalue = "hi"\n'
    )
    result = run_cli(capsys, "cases", "validate", "--allow-outside-paths", str(suite))
    assert result.code == 2, result.err
    assert "field 'suite.tool[1].fixture'" in result.err
    assert "/dev/zero" in result.err and "character device" in result.err


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        with pytest.raises(BadInputError) as info:
            userfiles.read_json(path)
    assert info.value.file == str(path) and "socket" in info.value.detail


def test_a_file_over_the_size_limit_is_refused_naming_file_and_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "rows.csv"
    data.write_text("id,word\n" + "".join(f"r{i},word{i}\n" for i in range(50)))
    suite = _suite(tmp_path, "rows.csv")
    assert run_cli(capsys, "cases", "validate", str(suite)).code == 0
    monkeypatch.setenv("EVALCTL_MAX_FILE_BYTES", "300")
    result = run_cli(capsys, "cases", "validate", str(suite))
    assert result.code == 2, result.err
    assert str(data) in result.err and "larger than the 300-byte limit" in result.err
    assert "max_file_bytes" in result.err  # the hint says how to raise it
    monkeypatch.delenv("EVALCTL_MAX_FILE_BYTES")
    # evalctl.toml sets it too (the working directory's, as for every setting).
    (tmp_path / "evalctl.toml").write_text("max_file_bytes = 300\n")
    monkeypatch.chdir(tmp_path)
    assert "300-byte limit" in run_cli(capsys, "cases", "validate", str(suite)).err
    (tmp_path / "evalctl.toml").write_text("")
    assert run_cli(capsys, "cases", "validate", str(suite)).code == 0


def test_the_limit_holds_for_a_file_that_grows_past_its_stat(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text("[" + "1," * 100 + "1]")
    userfiles.set_max_file_bytes(50)
    try:
        with pytest.raises(BadInputError) as info:
            userfiles.read_json(path)
    finally:
        userfiles.set_max_file_bytes(None)
    assert "50-byte limit" in info.value.detail
    assert userfiles.read_json(path)[0] == 1


@pytest.mark.parametrize("char", ["\u2028", "\u2029", "\x85"])
def test_a_jsonl_value_holding_a_unicode_line_separator_reads(tmp_path: Path, char: str) -> None:
    """Valid JSON may hold these characters raw inside a string; str.splitlines() split a
    row at each of them."""
    (tmp_path / "rows.jsonl").write_text(
        f'{{"id": "r1", "word": "a{char}b"}}\r\n{{"id": "r2", "word": "plain"}}\n',
        encoding="utf-8",
    )
    suite = load_suite(_suite(tmp_path, "rows.jsonl"))
    assert [c.id for c in suite.cases] == ["r1", "r2"]
    assert suite.cases[0].vars["word"] == f"a{char}b"


def test_a_broken_jsonl_line_is_still_named_by_its_number(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").write_text('{"id": "r1", "word": "a\u2028b"}\n\n{"id": \n')
    with pytest.raises(BadInputError) as info:
        load_suite(_suite(tmp_path, "rows.jsonl"))
    assert "line 3" in info.value.message


@pytest.mark.parametrize("value", ["-5", "0", "nan", "inf"])
def test_a_timeout_that_is_not_above_zero_is_bad_usage(
    echo_suite: Path, tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "script.toml"
    script.write_text('[[cases."echo/hello"]]\ncontent = "hello"\n')
    out = tmp_path / "out"
    result = run_cli(
        capsys,
        *("run", "--provider", "scripted", "--script", str(script), "--cases", str(echo_suite)),
        *("--case", "hello", "--timeout", value, "--out", str(out), "--no-progress"),
    )
    assert result.code == 2, result.err
    assert "--timeout" in result.err
    assert not (out / "results.json").exists()
