"""`evalctl models list|verify` and the manifest's refusal of a file with the wrong hash."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evalctl.errors import BadInputError
from evalctl.modelfiles import manifest
from tests.cli_helpers import run_cli


def _fake_manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sha256: str) -> Path:
    """A one-entry manifest whose model file lives in a tiny package on sys.path."""
    package = tmp_path / "fake_model_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    model = package / "tiny.gguf"
    model.write_bytes(b"GGUF tiny test payload")
    monkeypatch.syspath_prepend(str(tmp_path))
    fake = manifest.Manifest(
        default="tiny",
        model=[
            manifest.ModelEntry(
                name="tiny",
                description="test model",
                package="fake_model_pkg",
                pip_requirement="fake-model-pkg==0",
                file="tiny.gguf",
                size=model.stat().st_size,
                sha256=sha256,
            )
        ],
    )
    monkeypatch.setattr(manifest, "load_manifest", lambda: fake)
    return model


def test_list_shows_the_embedded_model(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "models", "list", "--json")
    assert result.code == 0, result.err
    rows = json.loads(result.out)["models"]
    default = next(r for r in rows if r["default"])
    entry = manifest.load_manifest().get(manifest.load_manifest().default)
    assert entry is not None
    assert default["name"] == entry.name
    assert default["installed"] is True
    assert default["sha256"] == entry.sha256
    assert default["size"] == entry.size
    assert Path(default["path"]).is_file()


def test_verify_the_embedded_model(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "models", "verify", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["ok"] is True
    assert report["sha256"] == report["expected_sha256"]


def test_verify_refuses_a_mismatch_with_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_manifest(tmp_path, monkeypatch, "0" * 64)
    result = run_cli(capsys, "models", "verify", "tiny")
    assert result.code == 2
    assert "SHA256 mismatch" in result.err
    assert "0" * 64 in result.err


def test_verify_accepts_a_matching_file_and_lists_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = b"GGUF tiny test payload"
    _fake_manifest(tmp_path, monkeypatch, hashlib.sha256(payload).hexdigest())
    assert run_cli(capsys, "models", "verify", "tiny").code == 0
    listed = json.loads(run_cli(capsys, "models", "list", "--json").out)["models"]
    assert [r["name"] for r in listed] == ["tiny"]


def test_a_gguf_path_outside_the_manifest_is_hashed_not_compared(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "other.gguf"
    path.write_bytes(b"GGUF other")
    result = run_cli(capsys, "models", "verify", str(path), "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["expected_sha256"] is None
    assert report["sha256"] == hashlib.sha256(b"GGUF other").hexdigest()


def test_unknown_model_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_cli(capsys, "models", "verify", "no-such-model")
    assert result.code == 2
    with pytest.raises(BadInputError):
        manifest.resolve("no-such-model")
