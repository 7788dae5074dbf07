"""`evalctl embed`: vectors, norms and pairwise cosines, as text and as JSON; providers
without embeddings and empty texts are bad input (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalctl.fakes import embedder
from evalctl.fakes.llm_server import FakeLLMServer
from tests.cli_helpers import run_cli

RED = "dry red wine"
RED_TOO = "a red wine, dry"
OTHER = "quarterly revenue report"


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.toml"
    path.write_text('[[default]]\ncontent = "ok"\n')
    return path


def test_json_carries_every_component_and_the_cosine_matrix(
    capsys: pytest.CaptureFixture[str], script: Path
) -> None:
    args = ["embed", RED, RED_TOO, OTHER, "--provider", "scripted", "--script", str(script)]
    result = run_cli(capsys, *args, "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["provider"] == "scripted"
    assert report["model"] == embedder.MODEL
    assert report["model_sha256"] == embedder.MODEL_SHA256
    assert report["dimensions"] == embedder.DIMENSIONS
    assert [t["vector"] for t in report["texts"]] == [
        embedder.fake_vector(t) for t in (RED, RED_TOO, OTHER)
    ]
    assert all(t["norm"] == pytest.approx(1.0) for t in report["texts"])
    matrix = report["cosine"]
    assert [row[i] for i, row in enumerate(matrix)] == pytest.approx([1.0, 1.0, 1.0])
    assert matrix[0][1] == pytest.approx(matrix[1][0])
    assert matrix[0][1] > matrix[0][2] + 0.5


def test_text_output_shows_model_size_components_norm_and_cosines(
    capsys: pytest.CaptureFixture[str], script: Path
) -> None:
    args = ["embed", RED, OTHER, "--provider", "scripted", "--script", str(script)]
    result = run_cli(capsys, *args)
    assert result.code == 0, result.err
    assert f"{embedder.MODEL} via scripted: 256 dimensions" in result.out
    first = embedder.fake_vector(RED)[0]
    assert f"[{first:+.4f}, " in result.out
    assert result.out.count("norm 1.0000") == 2
    assert "cosine similarity" in result.out


def test_one_text_has_no_cosine_table(capsys: pytest.CaptureFixture[str], script: Path) -> None:
    result = run_cli(capsys, "embed", RED, "--provider", "scripted", "--script", str(script))
    assert result.code == 0, result.err
    assert "cosine" not in result.out


def test_a_provider_without_embeddings_is_bad_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    result = run_cli(capsys, "embed", RED, "--provider", "anthropic")
    assert result.code == 2
    assert "provider 'anthropic' has no embeddings" in result.err


def test_an_empty_text_is_bad_input(capsys: pytest.CaptureFixture[str], script: Path) -> None:
    result = run_cli(capsys, "embed", RED, " ", "--provider", "scripted", "--script", str(script))
    assert result.code == 2
    assert "text 2 is empty" in result.err


def test_openai_through_the_fake_server(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeLLMServer() as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        result = run_cli(capsys, "embed", RED, "--provider", "openai", "--json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["texts"][0]["vector"] == embedder.fake_vector(RED)
    assert report["input_tokens"] == 3
