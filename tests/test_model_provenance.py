"""Which weights served a run: a GGUF outside the manifest (here the embedded model with one
tensor byte flipped) is hashed, the hash lands in the results, `compare` names the change
against a baseline made on the real weights, and `models verify` says there is nothing to
compare the hash with."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from evalctl.results.io import read_run
from tests import factories as f
from tests.cli_helpers import run_cli
from tests.local_helpers import embedded_model, reap_daemons  # noqa: F401  (fixture)


@pytest.fixture
def flipped_model(tmp_path: Path) -> Path:
    original = embedded_model().path
    copy = tmp_path / "flipped.gguf"
    shutil.copyfile(original, copy)
    data = bytearray(copy.read_bytes()[-1:])
    with copy.open("r+b") as fh:
        fh.seek(-1, 2)  # the last byte: inside the last tensor's data, past every header
        fh.write(bytes([data[0] ^ 0x01]))
    return copy


def test_models_verify_on_an_unlisted_file_says_there_is_nothing_to_compare(
    flipped_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(capsys, "models", "verify", str(flipped_model), "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["sha256"] == hashlib.sha256(flipped_model.read_bytes()).hexdigest()
    assert report["expected_sha256"] is None
    assert report["compared"] is False and report["ok"] is None
    assert "nothing to compare" in report["note"]
    plain = run_cli(capsys, "models", "verify", str(flipped_model))
    assert "not verified" in plain.out and "nothing to compare" in plain.out


@pytest.mark.model
def test_results_record_the_served_weights_and_compare_names_a_change(
    reap_daemons: None,  # noqa: F811
    echo_suite: Path,
    flipped_model: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("EVALCTL_LOCAL_THREADS", "1")
    out = tmp_path / "run"
    done = run_cli(
        capsys, "run", "--provider", "local", "--model", str(flipped_model), "--cases",
        str(echo_suite), "--out", str(out), "--no-progress", "--timeout", "300",
    )  # fmt: skip
    assert done.code in (0, 1), done.err  # scored either way: the flip does not stop loading
    served = hashlib.sha256(flipped_model.read_bytes()).hexdigest()
    assert read_run(out).provider.model_sha256 == served

    real = embedded_model().expected_sha256
    assert real is not None and real != served
    baseline = f.baseline({"echo/hello": "pass"}, provider="local", model="flipped")
    path = f.write_json(
        tmp_path / "local.json", baseline.model_copy(update={"model_sha256": real}).model_dump()
    )
    compared = run_cli(capsys, "compare", str(path), str(out), "--json")
    warnings = json.loads(compared.out)["warnings"]
    assert any("model weights changed" in w and real in w and served in w for w in warnings)
