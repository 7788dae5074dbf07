"""Estimated run cost from usage and the (overridable) price table."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalctl.chat import Usage
from evalctl.config import ModelPrice, Settings, load_settings
from evalctl.cost import DEFAULT_PRICES, estimate_cost, estimate_run_cost, price_for, price_table
from evalctl.errors import BadInputError


def test_exact_and_dated_model_names_match() -> None:
    table = price_table()
    assert price_for("claude-sonnet-4-5", table) == DEFAULT_PRICES["claude-sonnet-4-5"]
    assert price_for("claude-sonnet-4-5-20250929", table) == DEFAULT_PRICES["claude-sonnet-4-5"]
    # The longest prefix wins: flash-lite is not priced as flash.
    assert price_for("gemini-2.5-flash-lite-001", table) == DEFAULT_PRICES["gemini-2.5-flash-lite"]
    assert price_for("gemini-2.5-flash-preview", table) == DEFAULT_PRICES["gemini-2.5-flash"]


def test_unknown_models_have_no_price() -> None:
    table = price_table()
    assert price_for("claude-sonnet-9", table) is None
    # A prefix only counts at a `-` boundary.
    assert price_for("gemini-2.5-flashy", table) is None


def test_cost_arithmetic() -> None:
    price = ModelPrice(input_per_mtok=3.0, output_per_mtok=15.0)
    usage = Usage(input_tokens=1_000_000, output_tokens=200_000)
    assert estimate_cost(usage, price) == pytest.approx(6.0)
    assert estimate_cost(Usage(input_tokens=1234, output_tokens=56), price) == pytest.approx(
        0.004542
    )


def test_run_cost_is_none_for_unbilled_providers_and_unknown_models() -> None:
    usage = Usage(input_tokens=1000, output_tokens=1000)
    settings = Settings()
    assert estimate_run_cost("local", "claude-sonnet-4-5", usage, settings) is None
    assert estimate_run_cost("scripted", "claude-sonnet-4-5", usage, settings) is None
    assert estimate_run_cost("anthropic", "claude-unknown", usage, settings) is None
    assert estimate_run_cost("anthropic", "claude-sonnet-4-5", usage, settings) == pytest.approx(
        0.018
    )


def test_prices_are_overridable_in_evalctl_toml(tmp_path: Path) -> None:
    (tmp_path / "evalctl.toml").write_text(
        '[prices."claude-sonnet-4-5"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n'
        '[prices."my-gateway-model"]\ninput_per_mtok = 0.5\noutput_per_mtok = 0.5\n'
    )
    settings = load_settings(tmp_path, env={})
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert estimate_run_cost("anthropic", "claude-sonnet-4-5", usage, settings) == 3.0
    assert estimate_run_cost("gemini", "my-gateway-model", usage, settings) == 1.0
    # Defaults not overridden still apply.
    assert estimate_run_cost("gemini", "gemini-2.5-flash", usage, settings) == pytest.approx(2.8)


def test_bad_price_entries_are_reported(tmp_path: Path) -> None:
    (tmp_path / "evalctl.toml").write_text('[prices."x"]\ninput_per_mtok = -1\n')
    with pytest.raises(BadInputError, match="prices"):
        load_settings(tmp_path, env={})


def test_the_default_anthropic_model_has_a_price() -> None:
    from evalctl.config import Settings

    default = Settings().providers.anthropic_model
    assert price_for(default, DEFAULT_PRICES) is not None


def test_openai_compatible_runs_are_priced_only_for_known_models() -> None:
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    settings = Settings()
    assert estimate_run_cost("openai", "gpt-4o-mini-2024-07-18", usage, settings) == pytest.approx(
        0.75
    )
    # A model on one's own server (vLLM, llama.cpp) has no list price: no estimate.
    assert estimate_run_cost("openai", "/models/SmolLM2-135M.gguf", usage, settings) is None
