"""Estimated cost of a run from token usage and a price table.

Prices are USD per million tokens. The defaults below are list prices for standard
(non-batch, non-cached, short-prompt) requests and go stale: teams override or extend them in
`evalctl.toml`::

    [prices."claude-sonnet-4-5"]
    input_per_mtok = 3.0
    output_per_mtok = 15.0

A model matches an entry by exact name, else by the longest entry that is a `-`-separated
prefix of it (`claude-sonnet-4-5-20250929` uses `claude-sonnet-4-5`). An unknown model has no
estimate (None), rather than a wrong one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from evalctl.chat import Usage
from evalctl.config import ModelPrice, Settings
from evalctl.providers.registry import traits


def _p(input_per_mtok: float, output_per_mtok: float) -> ModelPrice:
    return ModelPrice(input_per_mtok=input_per_mtok, output_per_mtok=output_per_mtok)


DEFAULT_PRICES: dict[str, ModelPrice] = {
    "claude-opus-4-5": _p(5.0, 25.0),
    "claude-opus-4-1": _p(15.0, 75.0),
    "claude-opus-4-0": _p(15.0, 75.0),
    "claude-opus-4-20250514": _p(15.0, 75.0),
    # The default model; Sonnet-tier list price, as for 4.5 (override in evalctl.toml if it moves).
    "claude-sonnet-4-6": _p(3.0, 15.0),
    "claude-sonnet-4-5": _p(3.0, 15.0),
    "claude-sonnet-4-0": _p(3.0, 15.0),
    "claude-sonnet-4-20250514": _p(3.0, 15.0),
    "claude-haiku-4-5": _p(1.0, 5.0),
    "claude-3-5-haiku": _p(0.8, 4.0),
    # Gemini: thinking tokens are billed as output (the gemini provider counts them there).
    "gemini-2.5-pro": _p(1.25, 10.0),
    "gemini-2.5-flash": _p(0.30, 2.50),
    "gemini-2.5-flash-lite": _p(0.10, 0.40),
    "gemini-2.0-flash": _p(0.10, 0.40),
    # OpenAI (also what a gateway in front of OpenAI bills). A model on one's own server
    # (vLLM, llama.cpp) has no entry, so its runs get no estimate.
    "gpt-4.1": _p(2.0, 8.0),
    "gpt-4.1-mini": _p(0.40, 1.60),
    "gpt-4.1-nano": _p(0.10, 0.40),
    "gpt-4o": _p(2.50, 10.0),
    "gpt-4o-mini": _p(0.15, 0.60),
}


def price_table(overrides: Mapping[str, ModelPrice] | None = None) -> dict[str, ModelPrice]:
    return {**DEFAULT_PRICES, **(overrides or {})}


def price_for(model: str, table: Mapping[str, ModelPrice]) -> ModelPrice | None:
    if model in table:
        return table[model]
    candidates = [name for name in table if model.startswith(name + "-")]
    if not candidates:
        return None
    return table[max(candidates, key=len)]


def estimate_cost(usage: Usage, price: ModelPrice) -> float:
    dollars = (
        usage.input_tokens * price.input_per_mtok + usage.output_tokens * price.output_per_mtok
    ) / 1_000_000
    return round(dollars, 6)


def estimate_run_cost(provider: str, model: str, usage: Usage, settings: Settings) -> float | None:
    """What `Summary.estimated_cost_usd` should hold: None for unbilled providers/unknown models."""
    if not traits(provider).billed:
        return None
    price = price_for(model, price_table(settings.prices))
    return None if price is None else estimate_cost(usage, price)


def usage_pricer(
    provider: str, model: str, prices: Mapping[str, ModelPrice] | None = None
) -> Callable[[Usage], float | None]:
    """What one sample's usage cost on `provider`'s `model` (None for an unbilled provider or
    an unknown model), as `estimate_run_cost` prices a run: the registry and the price table
    are asked once, not per sample."""
    price = price_for(model, price_table(prices)) if traits(provider).billed else None
    if price is None:
        return lambda usage: None
    return lambda usage: estimate_cost(usage, price)
