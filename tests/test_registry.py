"""Provider detection order and availability reasons (README: Providers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalctl.config import Settings
from evalctl.errors import BadInputError, ExitCode, ProviderUnavailableError
from evalctl.providers.registry import (
    SPECS,
    ProviderOptions,
    availability,
    create,
    detect,
    traits,
)
from tests.cli_helpers import run_cli


def _opts(env: dict[str, str], script: Path | None = None) -> ProviderOptions:
    return ProviderOptions(settings=Settings(), env=env, script=script)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "local"),
        ({"GEMINI_API_KEY": "g"}, "gemini"),
        ({"GOOGLE_API_KEY": "g"}, "gemini"),
        ({"ANTHROPIC_API_KEY": "a", "GOOGLE_API_KEY": "g"}, "anthropic"),
        ({"EVALCTL_LOCAL_MODEL": "/m.gguf", "ANTHROPIC_API_KEY": "a"}, "local"),
        ({"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}, "openai"),
        ({"OPENAI_API_KEY": "o"}, "openai"),
        ({"GEMINI_API_KEY": "g", "OPENAI_API_KEY": "o"}, "gemini"),
    ],
)
def test_detection_follows_documented_priority(env: dict[str, str], expected: str) -> None:
    assert detect(_opts(env)) == expected


def test_every_provider_reports_a_reason_when_unavailable() -> None:
    rows = {row.name: row for row in availability(_opts({}))}
    assert set(rows) == {
        "local", "anthropic", "gemini", "openai", "scripted", "echo", "python", "http", "command"
    }  # fmt: skip
    assert rows["echo"].available  # it needs nothing
    assert not rows["anthropic"].available
    assert "ANTHROPIC_API_KEY" in rows["anthropic"].reason
    assert not rows["gemini"].available
    assert "GEMINI_API_KEY" in rows["gemini"].reason
    assert not rows["openai"].available
    assert "OPENAI_BASE_URL" in rows["openai"].reason and "OPENAI_API_KEY" in rows["openai"].reason
    assert not rows["scripted"].available
    assert "--script" in rows["scripted"].reason


def test_cloud_providers_are_available_once_their_key_is_set() -> None:
    rows = {
        r.name: r for r in availability(_opts({"ANTHROPIC_API_KEY": "k", "GEMINI_API_KEY": "k"}))
    }
    assert rows["anthropic"].available
    assert rows["gemini"].available


@pytest.mark.parametrize("var", ["OPENAI_BASE_URL", "OPENAI_API_KEY"])
def test_openai_needs_a_base_url_or_a_key(var: str) -> None:
    rows = {r.name: r for r in availability(_opts({var: "http://127.0.0.1:1/v1"}))}
    assert rows["openai"].available, rows["openai"].reason


def test_creating_an_unavailable_provider_exits_3_with_a_hint() -> None:
    with pytest.raises(ProviderUnavailableError) as info:
        create("anthropic", _opts({}))
    assert info.value.code is ExitCode.INFRA
    assert "ANTHROPIC_API_KEY" in info.value.message
    assert info.value.hint


def test_unknown_provider_is_bad_input() -> None:
    with pytest.raises(BadInputError) as info:
        create("mistral", _opts({}))
    assert info.value.code is ExitCode.BAD_INPUT
    assert "--provider" in info.value.message


def test_scripted_provider_is_created_from_its_script(tmp_path: Path) -> None:
    script = tmp_path / "s.toml"
    script.write_text('[[default]]\ncontent = "hi"\n')
    provider = create("scripted", _opts({}, script=script))
    assert provider.name == "scripted"


def test_provider_help_names_every_registered_provider(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The --provider help is built from the registry: a new spec shows up without an edit.
    done = run_cli(capsys, "run", "--help")
    assert done.code == 0
    help_text = " ".join(done.out.split())
    for name in SPECS:
        assert name in help_text


def test_traits_come_from_the_specs() -> None:
    # Cost estimates, --concurrency and --provider all read these, not lists of names.
    assert traits("anthropic").billed and traits("gemini").billed
    assert not traits("local").billed and not traits("scripted").billed
    # The local daemon serves as many requests at once as it has slots (sized to -j).
    assert traits("anthropic").concurrent and traits("local").concurrent
    # An unregistered name (a test double) has the base class's defaults: no trait.
    double = traits("a-test-double")
    assert not double.concurrent and not double.billed and not double.capabilities
    assert double.real and not double.deterministic
    # The stand-ins (scripted, echo) and the targets (applications, set up per suite) are
    # not models.
    assert [s.name for s in SPECS.values() if not s.traits.real] == [
        "scripted", "echo", "python", "http", "command"
    ]  # fmt: skip
    assert traits("http").concurrent and traits("command").concurrent
    assert not traits("python").concurrent
