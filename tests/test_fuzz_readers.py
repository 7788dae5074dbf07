"""Property-based: random bytes, random TOML and random JSON (deep nesting included) thrown at
every reader through the real entry point always end in exit 2 with one `error:` line and no
traceback. Example counts stay modest so the suite stays fast."""

from __future__ import annotations

import json
import string
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli_helpers import CliResult, run_cli

FUZZ = settings(
    max_examples=50,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# JSON values, nested a few levels by `recursive`; `deep` adds nesting past any limit.
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
deep = st.integers(min_value=1, max_value=20_000).flatmap(
    lambda n: st.sampled_from(["[" * n + "]" * n, '{"a":' * n + "1" + "}" * n, "[" * n])
)
json_texts = json_values.map(json.dumps) | deep | st.text()

# TOML documents: tables of keys to scalars, arrays and sub-tables, plus deep arrays.
toml_scalars = st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text()
toml_values = st.recursive(
    toml_scalars,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(string.ascii_letters, min_size=1), inner, max_size=3)
    ),
    max_leaves=12,
)
toml_docs = st.dictionaries(st.text(min_size=1), toml_values, min_size=1, max_size=5)
toml_texts = toml_docs.map(tomli_w.dumps) | deep.map(lambda d: f"a = {d}") | st.text()


def assert_exit_2(result: CliResult) -> None:
    assert result.code == 2, (result.code, result.err[-2000:])
    assert "Traceback" not in result.err + result.out
    assert result.err.startswith("error: ")


def _write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
    return path


@FUZZ
@given(content=st.binary(max_size=512) | json_texts)
def test_results_readers_refuse_random_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes
) -> None:
    path = _write(tmp_path / "results.json", content)
    assert_exit_2(run_cli(capsys, "compare", str(path), str(path)))
    assert_exit_2(run_cli(capsys, "report", str(path), "--html", str(tmp_path / "r.html")))
    assert_exit_2(run_cli(capsys, "baseline", "--from", str(path), "--out", str(tmp_path / "b")))


@FUZZ
@given(content=st.binary(max_size=512) | toml_texts)
def test_the_suite_loader_refuses_random_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes
) -> None:
    path = _write(tmp_path / "suite.toml", content)
    assert_exit_2(run_cli(capsys, "cases", "validate", str(path)))


def _not_a_script(doc: dict[str, Any]) -> bool:
    # A document of only known keys may be a valid (if useless) script; so is an empty one.
    return bool(set(doc) - {"model", "default", "cases"})


def _bytes_not_a_script(raw: bytes) -> bool:
    try:
        return _not_a_script(tomllib.loads(raw.decode("utf-8")))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return True


@FUZZ
@given(
    content=st.binary(max_size=512).filter(_bytes_not_a_script)
    | toml_docs.filter(_not_a_script).map(tomli_w.dumps)
    | deep.map(lambda d: f"a = {d}")
)
def test_the_script_reader_refuses_random_input(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes
) -> None:
    script = _write(tmp_path / "script.toml", content)
    result = run_cli(
        capsys, "run", "--provider", "scripted", "--script", str(script), "--cases",
        str(echo_suite), "--out", str(tmp_path / "out"), "--no-progress",
    )  # fmt: skip
    assert_exit_2(result)


@pytest.fixture
def run_dir(echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    script = tmp_path / "script.toml"
    script.write_text('[[cases."echo/hello"]]\ncontent = "hello"\n')
    out = tmp_path / "run"
    run_cli(
        capsys, "run", "--provider", "scripted", "--script", str(script), "--cases",
        str(echo_suite), "--out", str(out), "--no-progress",
    )  # fmt: skip
    assert (out / "manifest.json").is_file()
    return out


@FUZZ
@given(content=st.binary(max_size=512) | json_texts)
def test_resume_refuses_a_random_manifest(
    run_dir: Path, capsys: pytest.CaptureFixture[str], content: str | bytes
) -> None:
    _write(run_dir / "manifest.json", content)
    assert_exit_2(run_cli(capsys, "run", "--resume", str(run_dir), "--no-progress"))


@FUZZ
@given(content=st.binary(max_size=512) | json_texts.map(str.encode))
def test_resume_refuses_a_random_journal(
    run_dir: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    # Ending in a newline, every line is whole: none is a kill's half-written last line.
    _write(run_dir / "journal.jsonl", content + b"\n")
    assert_exit_2(run_cli(capsys, "run", "--resume", str(run_dir), "--no-progress"))
