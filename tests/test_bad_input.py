"""The error contract, end to end through the real entry point: every reading command given a
nested, binary, truncated, missing or wrong-type file exits 2 with one line naming the file
and no traceback; damaged run directories and missing --script/--model paths too; `--json`
adds one error object on stdout; environment faults exit 3."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalctl.errors import ExitCode, InfraError
from evalctl.results.io import write_run
from evalctl.runner.journal import Journal
from tests import factories as f
from tests.cli_helpers import CliResult, run_cli

DEEP_JSON = "[" * 100_000
DEEP_TOML = "a = " + "[" * 100_000
# Deep enough for any recursive walker, shallow enough for the parsers themselves.
NESTED_JSON = '{"a":' * 300 + "1" + "}" * 300
NESTED_TOML = "a = " + "[" * 500 + "]" * 500
BINARY = b"\xff\xfe\x00GGUF\x00\x01binary"


def bad_files(directory: Path, suffix: str) -> dict[str, Path]:
    """One file per way a user file can be wrong."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "deep": DEEP_JSON if suffix == ".json" else DEEP_TOML,
        "nested": NESTED_JSON if suffix == ".json" else NESTED_TOML,
        "truncated": '{"kind": "run", "cases": [' if suffix == ".json" else '[suite]\nname = "x',
        "empty-object": "{}" if suffix == ".json" else "",
    }
    out = {}
    for name, text in files.items():
        out[name] = directory / f"{name}{suffix}"
        out[name].write_text(text)
    out["binary"] = directory / f"binary{suffix}"
    out["binary"].write_bytes(BINARY)
    out["missing"] = directory / f"missing{suffix}"
    out["directory"] = directory / f"a-directory{suffix}"
    out["directory"].mkdir(exist_ok=True)
    return out


def assert_bad_input(result: CliResult, path: Path | None = None) -> None:
    assert result.code == ExitCode.BAD_INPUT, (result.code, result.err, result.out)
    assert "Traceback" not in result.err + result.out
    assert result.err.startswith("error: "), result.err
    if path is not None:
        assert str(path) in result.err


JSON_COMMANDS = {
    "compare": lambda p, tmp: ["compare", str(p), str(p)],
    "baseline --from": lambda p, tmp: ["baseline", "--from", str(p), "--out", str(tmp / "b.json")],
    "report": lambda p, tmp: ["report", str(p), "--html", str(tmp / "r.html")],
    "merge": lambda p, tmp: ["merge", str(p), str(p), "--out", str(tmp / "merged")],
}


@pytest.mark.parametrize("command", sorted(JSON_COMMANDS))
@pytest.mark.parametrize(
    "kind", ["deep", "nested", "truncated", "binary", "missing", "directory", "empty-object"]
)
def test_every_json_reader_refuses_bad_files_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, kind: str
) -> None:
    path = bad_files(tmp_path / "in", ".json")[kind]
    result = run_cli(capsys, *JSON_COMMANDS[command](path, tmp_path))
    assert_bad_input(result, path)


def _run(script: Path, tmp: Path, *more: str) -> list[str]:
    out = ["--out", str(tmp / "out"), "--no-progress"]
    return ["run", "--provider", "scripted", "--script", str(script), *more, *out]


TOML_COMMANDS = {
    "cases validate": lambda p, tmp, script: ["cases", "validate", str(p)],
    "run --cases": lambda p, tmp, script: _run(script, tmp, "--cases", str(p)),
    "run --script": lambda p, tmp, script: _run(p, tmp),
}


@pytest.mark.parametrize("command", sorted(TOML_COMMANDS))
@pytest.mark.parametrize("kind", ["deep", "nested", "truncated", "binary", "missing"])
def test_every_toml_reader_refuses_bad_files_with_exit_2(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, kind: str
) -> None:
    path = bad_files(tmp_path / "in", ".toml")[kind]
    script = tmp_path / "script.toml"
    script.write_text('[[cases."echo/hello"]]\ncontent = "hello"\n')
    args = TOML_COMMANDS[command](path, tmp_path, script)
    if command == "run --script":
        args += ["--cases", str(echo_suite)]
    assert_bad_input(run_cli(capsys, *args), path)


def test_a_script_that_is_a_directory_or_missing_is_bad_input(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for script in (tmp_path, tmp_path / "missing.toml"):
        result = run_cli(
            capsys, "run", "--provider", "scripted", "--script", str(script), "--cases",
            str(echo_suite), "--out", str(tmp_path / "out"), "--no-progress",
        )  # fmt: skip
        assert_bad_input(result, script)
        assert "--script" in result.err


def test_the_scripted_provider_without_a_script_is_bad_input(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A missing flag is the user's to fix (2), not an unavailable machine (3).
    for command in ("run", "baseline"):
        result = run_cli(
            capsys, command, "--provider", "scripted", "--cases", str(echo_suite),
            "--out", str(tmp_path / command), *(["--no-progress"] if command == "run" else []),
        )  # fmt: skip
        assert_bad_input(result)
        assert "--script" in result.err


def test_a_missing_model_path_is_bad_input(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such.gguf"
    result = run_cli(
        capsys, "run", "--provider", "local", "--model", str(missing), "--cases",
        str(echo_suite), "--out", str(tmp_path / "out"), "--no-progress",
    )  # fmt: skip
    assert_bad_input(result, missing)
    assert_bad_input(run_cli(capsys, "models", "verify", str(missing)), missing)


def _good_run(echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    script = tmp_path / "script.toml"
    script.write_text(
        '[[cases."echo/hello"]]\ncontent = "hello"\n[[cases."echo/shout"]]\ncontent = "HI"\n'
    )
    out = tmp_path / "run"
    done = run_cli(
        capsys, "run", "--provider", "scripted", "--script", str(script), "--cases",
        str(echo_suite), "--out", str(out), "--no-progress",
    )  # fmt: skip
    assert done.code in (0, 1), done.err
    (out / "results.json").unlink()  # as a kill leaves it: resumable
    return out


@pytest.mark.parametrize(
    "damage", ["bad byte in journal", "deep journal line", "journal is a directory",
               "manifest is a directory", "manifest is binary", "manifest nested deep"],
)  # fmt: skip
def test_a_damaged_run_directory_refuses_resume_with_exit_2(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    out = _good_run(echo_suite, tmp_path, capsys)
    journal, manifest = out / "journal.jsonl", out / "manifest.json"
    if damage == "bad byte in journal":
        data = bytearray(journal.read_bytes())
        data[20] = 0xFF
        journal.write_bytes(bytes(data))
        where = journal
    elif damage == "deep journal line":
        journal.write_text(NESTED_JSON + "\n" + journal.read_text())
        where = journal
    elif damage == "journal is a directory":
        journal.unlink()
        journal.mkdir()
        where = journal
    elif damage == "manifest is a directory":
        manifest.unlink()
        manifest.mkdir()
        where = manifest
    elif damage == "manifest is binary":
        manifest.write_bytes(BINARY)
        where = manifest
    else:
        manifest.write_text('{"a":' * 5000 + "1" + "}" * 5000)
        where = manifest
    result = run_cli(capsys, "run", "--resume", str(out), "--no-progress")
    assert_bad_input(result, where)
    if "journal" in damage and "directory" not in damage:
        assert "line 1 is damaged" in result.err


def test_out_that_is_a_file_is_bad_input(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "script.toml"
    script.write_text('[[cases."echo/hello"]]\ncontent = "hello"\n')
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    for out in (blocker, blocker / "under"):
        result = run_cli(
            capsys, "run", "--provider", "scripted", "--script", str(script), "--cases",
            str(echo_suite), "--out", str(out), "--no-progress",
        )  # fmt: skip
        assert_bad_input(result, out)
    assert blocker.read_text() == ""


def test_merge_out_onto_an_existing_file_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shard = tmp_path / "shard"
    write_run(f.run([f.case("s/a")]), shard)
    target = tmp_path / "existing.json"
    target.write_text("keep me")
    result = run_cli(capsys, "merge", str(shard), "--out", str(target))
    assert_bad_input(result, target)
    assert "--out" in result.err
    assert target.read_text() == "keep me"


def test_json_errors_print_one_object_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = bad_files(tmp_path, ".json")["truncated"]
    result = run_cli(capsys, "compare", str(path), str(path), "--json")
    assert result.code == 2
    error = json.loads(result.out)["error"]
    assert set(error) == {"exit_code", "message", "file", "field", "hint", "problems"}
    assert error["exit_code"] == 2
    assert error["file"] == str(path)
    assert "truncated JSON" in error["message"]
    # A usage error too, with null where nothing is known.
    usage = run_cli(capsys, "compare", "--no-such-flag", "--json")
    assert usage.code == 2
    assert json.loads(usage.out)["error"]["file"] is None
    assert json.loads(usage.out)["error"]["problems"] == []


def test_json_field_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = f.write_json(tmp_path / "r.json", {"kind": "run", "schema_version": 999})
    error = json.loads(run_cli(capsys, "compare", str(path), str(path), "--json").out)["error"]
    assert error["field"] == "schema_version"
    assert error["hint"] is None or isinstance(error["hint"], str)


def test_a_gate_failure_keeps_its_result_object_with_the_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    baseline = f.write_json(
        tmp_path / "base.json", f.baseline({"s/a": "pass"}).model_dump(mode="json")
    )
    write_run(f.run([f.case("s/a", "fail")]), tmp_path / "run")
    result = run_cli(
        capsys, "compare", "--gate", "strict", str(baseline), str(tmp_path / "run"), "--json"
    )
    assert result.code == 1
    document = json.loads(result.out)  # exactly one object: the comparison
    assert "error" not in document
    assert document["exit_code"] == 1
    assert [r["key"] for r in document["regressions"]] == ["s/a"]


def test_a_full_disk_while_journaling_is_an_environment_error() -> None:
    # /dev/full answers every write with ENOSPC: a real full disk, on any Linux machine.
    with pytest.raises(InfraError) as info:
        Journal(Path("/dev/full")).append(f.case("s/a"))
    assert info.value.code == ExitCode.INFRA
    assert "/dev/full" in info.value.message
    assert "No space left" in info.value.message
    assert info.value.hint is not None and "disk space" in info.value.hint


def test_a_model_path_that_is_a_directory_is_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(capsys, "models", "verify", str(tmp_path))
    assert_bad_input(result, tmp_path)
    assert "is a directory" in result.err


@pytest.mark.parametrize(
    ("script", "field", "message"),
    [
        (
            '[[cases."echo/hello"]]\ncontent = "a"\n[[cases."echo/hello"]]\ncontnet = "b"\n',
            "field 'cases.echo/hello[2].contnet'",
            "unknown key (known: content, tool_calls,",
        ),
        ('modle = "x"\n', "field 'modle'", "unknown key (known: model, default, cases)"),
        (
            '[[cases.hello]]\ntool_calls = [{ name = "t", args = {} }]\n',
            "field 'cases.hello[1].tool_calls[1].args'",
            "unknown key (known: name, arguments)",
        ),
    ],
)
def test_a_mistyped_reply_script_key_is_located_like_a_suite_error(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], script: str,
    field: str, message: str,
) -> None:  # fmt: skip
    # Replies numbered from 1 and "unknown key" with the valid ones, as in suite errors.
    path = tmp_path / "script.toml"
    path.write_text(script)
    result = run_cli(capsys, "cases", "validate", str(echo_suite), "--script", str(path))
    assert_bad_input(result, path)
    assert field in result.err and message in result.err, result.err
