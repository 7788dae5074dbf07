"""Assertions on what a case cost rather than what it answered: latency, cost, tokens.

They judge the attempt's own measurements in the scoring context (latency at scoring, usage
summed over its requests, the estimated cost). A measurement the context lacks (outside a
run; a provider that is not billed or a model without a price) is `n/a`, not a pass.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from evalctl.assertions.base import Params, outcome
from evalctl.results.models import CheckResult
from evalctl.scoring.check import Check, ScoringContext


class LatencyParams(Params):
    max_ms: float = Field(ge=0)


class CostParams(Params):
    max_usd: float = Field(ge=0)


class TokensParams(Params):
    max_input: int | None = Field(default=None, ge=0)
    max_output: int | None = Field(default=None, ge=0)
    max_total: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _some_bound(self) -> TokensParams:
        if self.max_input is None and self.max_output is None and self.max_total is None:
            raise ValueError("give at least one of max_input, max_output, max_total")
        return self


def _not_measured(type_name: str, why: str) -> CheckResult:
    return CheckResult(name=type_name, status="n/a", message=why)


def _at_most(type_name: str, actual: float, bound: float, unit: str) -> CheckResult:
    why = f"{actual:g} {unit} is over the bound of {bound:g} {unit}"
    return outcome(type_name, actual <= bound, f"<= {bound:g}", actual, why)


class Latency(Check[LatencyParams]):
    """The attempt took at most `max_ms` milliseconds, measured when it was scored."""

    type_name = "latency"
    params_model = LatencyParams

    def evaluate(self, params: LatencyParams, ctx: ScoringContext) -> CheckResult:
        if ctx.latency_ms is None:
            return _not_measured(self.type_name, "no latency was measured (not in a run)")
        return _at_most(self.type_name, ctx.latency_ms, params.max_ms, "ms")


class Cost(Check[CostParams]):
    """The attempt's estimated cost is at most `max_usd` dollars; `n/a` where the provider
    is not billed or the model has no price."""

    type_name = "cost"
    params_model = CostParams

    def evaluate(self, params: CostParams, ctx: ScoringContext) -> CheckResult:
        if ctx.cost_usd is None:
            why = "no cost estimate: the provider is not billed or the model has no price"
            return _not_measured(self.type_name, why)
        return _at_most(self.type_name, ctx.cost_usd, params.max_usd, "USD")


class Tokens(Check[TokensParams]):
    """The attempt's tokens, summed over its requests, are within every bound given:
    `max_input`, `max_output`, `max_total`."""

    type_name = "tokens"
    params_model = TokensParams

    def evaluate(self, params: TokensParams, ctx: ScoringContext) -> CheckResult:
        if ctx.usage is None:
            return _not_measured(self.type_name, "no token usage was recorded (not in a run)")
        measured = {
            "input": ctx.usage.input_tokens,
            "output": ctx.usage.output_tokens,
            "total": ctx.usage.input_tokens + ctx.usage.output_tokens,
        }
        bounds = {"input": params.max_input, "output": params.max_output}
        bounds["total"] = params.max_total
        given = {part: bound for part, bound in bounds.items() if bound is not None}
        over = [
            f"{part} {measured[part]} > {bound}"
            for part, bound in given.items()
            if measured[part] > bound
        ]
        expected: dict[str, Any] = {f"max_{part}": bound for part, bound in given.items()}
        actual = {part: measured[part] for part in given}
        return outcome(
            self.type_name, not over, expected, actual, "tokens over: " + ", ".join(over)
        )


CHECKS = (Latency(), Cost(), Tokens())
