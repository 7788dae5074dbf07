"""`evalctl run --provider all`: providers missing a prerequisite are skipped with the reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli

PERFECT = """
[[cases."echo/hello"]]
content = "hello"

[[cases."echo/shout"]]
tool_calls = [{ name = "upper", arguments = { text = "hi" } }]

[[cases."echo/shout"]]
content = "HI"
"""


def test_all_mode_skips_unavailable_providers_with_reasons(
    echo_suite: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No API keys (the autouse fixture clears them) and a local model that does not exist.
    monkeypatch.setenv("EVALCTL_LOCAL_MODEL", str(tmp_path / "missing.gguf"))
    script = tmp_path / "script.toml"
    script.write_text(PERFECT)
    out = tmp_path / "out"
    args = ["run", "--provider", "all", "--script", str(script), "--cases", str(echo_suite)]
    result = run_cli(capsys, *args, "--out", str(out), "--json", "--no-progress")
    assert result.code == 0, result.err
    runs = {r["provider"]: r for r in json.loads(result.out)["runs"]}
    assert set(runs) == {"local", "anthropic", "gemini", "openai", "scripted"}
    assert not runs["anthropic"]["ran"]
    assert "ANTHROPIC_API_KEY" in runs["anthropic"]["skip_reason"]
    assert not runs["gemini"]["ran"]
    assert "GEMINI_API_KEY" in runs["gemini"]["skip_reason"]
    assert not runs["openai"]["ran"]
    assert "OPENAI_BASE_URL" in runs["openai"]["skip_reason"]
    assert not runs["local"]["ran"]
    assert "missing.gguf" in runs["local"]["skip_reason"]
    assert runs["scripted"]["ran"]
    assert runs["scripted"]["summary"]["passed"] == 2
    assert (out / "scripted" / "results.json").is_file()
    assert not (out / "anthropic").exists()


def test_all_mode_refuses_a_model_name(
    echo_suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    result = run_cli(capsys, "run", "--provider", "all", "--model", "x", "--cases", str(echo_suite))
    assert result.code == 2
    assert "--model" in result.err
