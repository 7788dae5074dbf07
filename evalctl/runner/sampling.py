"""Which sampling a case's requests are sent: `--temperature`/`--seed` > the case's own >
its suite's > greedy (temperature 0, top_p 1, seed 0)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import GREEDY_SEED, GREEDY_TEMPERATURE, GREEDY_TOP_P, Sampling


@dataclass(frozen=True)
class SamplingFlags:
    """The command line's overrides; None: not given."""

    temperature: float | None = None
    seed: int | None = None


T = TypeVar("T")


def _first(*values: T | None, default: T) -> T:
    return next((v for v in values if v is not None), default)


def resolve_sampling(flags: SamplingFlags, suite: SuiteTable, case: Case | None = None) -> Sampling:
    """Every field set. Without `case`: what the suite's cases get unless they say more."""
    return Sampling(
        temperature=_first(
            flags.temperature,
            case.temperature if case else None,
            suite.temperature,
            default=GREEDY_TEMPERATURE,
        ),
        top_p=_first(case.top_p if case else None, suite.top_p, default=GREEDY_TOP_P),
        seed=_first(flags.seed, case.seed if case else None, suite.seed, default=GREEDY_SEED),
    )
