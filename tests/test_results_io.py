"""Atomic writers and the strict results reader."""

from __future__ import annotations

import errno
import json
import os
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from evalctl.errors import BadInputError, ExitCode, InfraError
from evalctl.results.io import (
    dumps_toml,
    from_toml,
    mark_nulls,
    read_run,
    unmark_nulls,
    write_run,
    write_text_atomic,
)
from evalctl.results.models import RunResult
from tests import factories as f


def _sample() -> RunResult:
    return f.run(
        [
            f.case("suite/a", "pass", latency_ms=120, input_tokens=10, output_tokens=5),
            f.case("suite/b", "fail", failed_checks=("answer",)),
            f.case("suite/c", "error"),
        ]
    )


def _write_sample(tmp_path: Path) -> Path:
    return write_run(_sample(), tmp_path / "out")


def _dump(tmp_path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_write_sample(tmp_path).read_text())
    return data


# ------------------------------------------------------------------ writing


def test_write_run_writes_json_and_toml_that_read_back(tmp_path: Path) -> None:
    result = _sample()
    path = write_run(result, tmp_path / "deep" / "out")
    assert path == tmp_path / "deep" / "out" / "results.json"
    assert read_run(path) == result
    toml = tomllib.loads((path.parent / "results.toml").read_text())
    assert toml["run_id"] == result.run_id
    assert [c["key"] for c in toml["cases"]] == ["suite/a", "suite/b", "suite/c"]


def test_toml_keeps_nulls_as_an_explicit_marker(tmp_path: Path) -> None:
    path = _write_sample(tmp_path)
    data = json.loads(path.read_text())
    text = (path.parent / "results.toml").read_text()
    toml = tomllib.loads(text)
    assert data["provider"]["model_sha256"] is None
    assert toml["provider"]["model_sha256"] == {"$null": True}
    assert toml["cases"][0]["error"] == {"$null": True}
    assert toml["cases"][2]["error"] == "connection refused"
    # The file says so itself, and reads back to exactly the JSON.
    assert text.startswith("# evalctl results") and '{"$null" = true}' in text.split("\n\n")[0]
    assert from_toml(text) == data


def test_null_items_in_lists_survive_the_toml_round_trip() -> None:
    value = {"a": None, "b": {"c": None, "d": 1}, "e": [None, "x", {"f": None, "g": [None, 2]}]}
    marked = mark_nulls(value)
    assert marked["e"][0] == {"$null": True}
    assert unmark_nulls(tomllib.loads(tomli_w.dumps(marked))) == value


def test_json_is_stable_and_ends_with_newline(tmp_path: Path) -> None:
    first = _write_sample(tmp_path).read_text()
    second = _write_sample(tmp_path).read_text()
    assert first == second
    assert first.endswith("}\n")
    assert first.startswith('{\n  "schema_version": 3,\n  "kind": "run",')


def test_atomic_write_leaves_no_temp_files_and_keeps_mode(tmp_path: Path) -> None:
    target = tmp_path / "file.json"
    write_text_atomic(target, "one")
    assert target.stat().st_mode & 0o777 == 0o644
    target.chmod(0o600)
    write_text_atomic(target, "two")
    assert target.read_text() == "two"
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.json"]


def test_failed_write_keeps_the_old_file_and_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "results.json"
    target.write_text("old")

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(InfraError) as exc:
        write_text_atomic(target, "new")
    assert exc.value.code == ExitCode.INFRA
    assert "Input/output error" in str(exc.value)
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_unwritable_target_is_bad_input_naming_the_file(tmp_path: Path) -> None:
    target = tmp_path / "is-a-dir"
    target.mkdir()
    with pytest.raises(BadInputError) as exc:
        write_text_atomic(target, "x")
    assert exc.value.file == str(target)
    assert [p.name for p in tmp_path.iterdir()] == ["is-a-dir"]


def test_out_dir_under_a_regular_file_is_bad_input(tmp_path: Path) -> None:
    # A path through a regular file fails for root too, unlike a read-only directory.
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    with pytest.raises(BadInputError, match="cannot write"):
        write_run(_sample(), blocker / "out")


# ------------------------------------------------------------------ reading


def _bad(path: Path) -> BadInputError:
    with pytest.raises(BadInputError) as exc:
        read_run(path)
    assert exc.value.code == ExitCode.BAD_INPUT
    assert exc.value.file is not None and exc.value.file.endswith(path.name)
    assert str(path.name) in str(exc.value)
    return exc.value


def test_reads_a_run_directory(tmp_path: Path) -> None:
    path = _write_sample(tmp_path)
    assert read_run(path.parent).run_id == read_run(path).run_id


def test_missing_file(tmp_path: Path) -> None:
    err = _bad(tmp_path / "nope.json")
    assert "no such file" in err.message


@pytest.mark.parametrize("fraction", [0.2, 0.5, 0.9])
def test_truncated_json_says_truncated(tmp_path: Path, fraction: float) -> None:
    path = _write_sample(tmp_path)
    text = path.read_text()
    for cut in range(int(len(text) * fraction), int(len(text) * fraction) + 15):
        path.write_text(text[:cut])
        err = _bad(path)
        assert "truncated JSON" in err.message, (cut, err.message)
        assert " at line " in err.message


def test_syntax_error_mid_file_is_invalid_not_truncated(tmp_path: Path) -> None:
    path = _write_sample(tmp_path)
    path.write_text(path.read_text().replace('"kind": "run",', '"kind": "run",,', 1))
    err = _bad(path)
    assert "invalid JSON" in err.message
    assert "line 3" in err.message


def test_empty_file(tmp_path: Path) -> None:
    path = f.write_json(tmp_path / "r.json", {})
    path.write_text("")
    assert "empty file" in _bad(path).message


def test_top_level_must_be_an_object(tmp_path: Path) -> None:
    err = _bad(f.write_json(tmp_path / "r.json", [1, 2]))
    assert "JSON object" in err.message


def test_a_baseline_is_not_a_run(tmp_path: Path) -> None:
    path = f.write_json(tmp_path / "local.json", f.baseline({"s/a": "pass"}).model_dump())
    err = _bad(path)
    assert err.field == "kind"
    assert "this is a baseline, expected run results" in err.message


def test_unknown_document(tmp_path: Path) -> None:
    err = _bad(f.write_json(tmp_path / "r.json", {"hello": "world"}))
    assert "neither run results nor a baseline" in err.message


def test_unknown_schema_version_names_supported_versions(tmp_path: Path) -> None:
    data = _dump(tmp_path)
    data["schema_version"] = 4
    err = _bad(f.write_json(tmp_path / "r.json", data))
    assert err.field == "schema_version"
    assert "unsupported schema_version 4" in err.message
    assert "reads version 1, 2, 3" in err.message
    assert err.hint is not None and "newer evalctl" in err.hint


def test_missing_schema_version(tmp_path: Path) -> None:
    data = _dump(tmp_path)
    del data["schema_version"]
    err = _bad(f.write_json(tmp_path / "r.json", data))
    assert err.field == "schema_version"
    assert "missing" in err.message


def test_wrong_type_inside_a_case_names_the_case_key_and_field(tmp_path: Path) -> None:
    data = _dump(tmp_path)
    data["cases"][1]["status"] = "passed"
    err = _bad(f.write_json(tmp_path / "r.json", data))
    assert err.case_id == "suite/b"
    assert err.field == "status"
    assert "'passed'" in err.message
    assert "case 'suite/b'" in str(err)


def test_nested_field_path_inside_a_case(tmp_path: Path) -> None:
    data = _dump(tmp_path)
    data["cases"][0]["checks"][0]["status"] = "sometimes"
    err = _bad(f.write_json(tmp_path / "r.json", data))
    # List positions count from 1, as in every user file's errors.
    assert (err.case_id, err.field) == ("suite/a", "checks[1].status")
    # `passed` is derived from `status`; a bad one read back is named with its check.
    data = _dump(tmp_path)
    data["cases"][0]["checks"][0]["passed"] = "sometimes"
    err = _bad(f.write_json(tmp_path / "r.json", data))
    assert (err.case_id, err.field) == ("suite/a", "checks[1]")
    assert "passed must be true or false" in err.message


def test_unknown_key_inside_a_case(tmp_path: Path) -> None:
    data = _dump(tmp_path)
    data["cases"][2]["colour"] = "blue"
    err = _bad(f.write_json(tmp_path / "r.json", data))
    assert (err.case_id, err.field) == ("suite/c", "colour")
    assert err.message.endswith(": unknown key")


def test_unknown_top_level_key(tmp_path: Path) -> None:
    data = _dump(tmp_path)
    data["extra"] = 1
    err = _bad(f.write_json(tmp_path / "r.json", data))
    assert (err.case_id, err.field) == (None, "extra")
    assert err.message.endswith(": unknown key")


def test_case_without_usable_key_falls_back_to_position(tmp_path: Path) -> None:
    data = _dump(tmp_path)
    data["cases"][1]["key"] = 42
    err = _bad(f.write_json(tmp_path / "r.json", data))
    assert (err.case_id, err.field) == ("cases[2]", "key")


def test_more_problems_are_counted(tmp_path: Path) -> None:
    data = _dump(tmp_path)
    data["cases"][0]["status"] = 1
    data["cases"][1]["status"] = 2
    err = _bad(f.write_json(tmp_path / "r.json", data))
    assert "1 more problem in this file" in err.message


def test_a_version_2_file_still_reads(tmp_path: Path) -> None:
    # Version 2 had none of the platform, sampling or gates; a file without them reads with
    # them empty.
    data = _dump(tmp_path)
    data["schema_version"] = 2
    data["settings"].pop("sampling", None)
    data["settings"].pop("gates", None)
    data.pop("platform", None)
    run = read_run(f.write_json(tmp_path / "v2.json", data))
    assert run.schema_version == 3  # upgraded when read (evalctl.results.versions)
    assert run.settings.gates == {}
    assert run.platform is None
    assert [c.key for c in run.cases] == [c["key"] for c in data["cases"]]


def test_a_write_to_a_fifo_or_device_writes_into_it_and_never_replaces_it(tmp_path: Path) -> None:
    # `--junit /dev/null` as root must not put a regular file where /dev/null was: a FIFO
    # stands in for the device here, so the test cannot harm the machine if this breaks.
    import stat
    import threading

    from evalctl.results.io import write_text_atomic

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
    reader.start()
    write_text_atomic(fifo, "through the pipe\n")
    reader.join(30)
    assert received == ["through the pipe\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_the_toml_writer_reads_back_equal_on_awkward_data() -> None:
    data = {
        "plain": "text",
        "odd key.with dots": 'quote " backslash \\ DEL \x7f NUL \x00 tab \t é \u2028',
        "n": -(2**62),
        "f": 1e-05,
        "big": 1.5e300,
        "flags": [True, False],
        "empty_list": [],
        "empty_table": {},
        "mixed": [1, "a", {"x": [1, 2]}, [[]]],
        "null": {"$null": True},
        "table": {"inner": {"deep": 1}, "s": "v", "rows": [{"a": 1}, {"b": {"c": "d"}}]},
        "cases": [{"key": "s/a", "checks": [{"name": "x", "passed": True}], "usage": {"in": 1}}],
    }
    assert tomllib.loads(dumps_toml(data)) == data
    # As tomli_w laid it out: tables and arrays of tables, not one long inline line.
    assert "\n[[cases]]\n" in dumps_toml(data) and "\n[table.inner]\n" in dumps_toml(data)


def test_the_toml_writer_marks_nulls_itself() -> None:
    data = {"a": None, "l": [None, {"b": None}], "t": {"c": None}, "rows": [{"d": None}]}
    text = dumps_toml(data)
    assert from_toml(text) == data
    assert tomllib.loads(text) == mark_nulls(data)
