"""Which sampling a case's requests are sent: `--temperature`/`--seed` > the case's own >
its suite's > greedy (temperature 0, top_p 1, seed 0); and, in a sampled run (`--samples K`),
what each of a case's K samples is sent.

Sample r (0-based) is sent seed r. A case whose sampling resolves to greedy is sampled at
PERTURB_TEMPERATURE instead: greedy decoding drifts across hardware because near-tied tokens
flip when floating point sums in another order, and K greedy repeats on one machine are one
answer K times. A low temperature with seeds flips the same near-ties on purpose, so the K
samples measure how stable each case is (docs/gating.md, "Sampled baselines").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from evalctl.cases.schema import Case, SuiteTable
from evalctl.chat import GREEDY_SEED, GREEDY_TEMPERATURE, GREEDY_TOP_P, Sampling
from evalctl.results.models import SampleSettings

# Low enough that a case's answer keeps its meaning (the tokens that change are those the
# model nearly tied on, the ones another CPU or GPU build flips), high enough that seeds
# reach them. Measured on the embedded model, asset-triage at K=3: no case left its greedy
# status, and 9 checks showed unstable (6 at 0.2), among them the one a no-AVX build
# flipped (docs/gating.md). top_p is left as the suite set it; llama.cpp's top-k 40 and
# min-p 0.05 bound the tail either way.
PERTURB_TEMPERATURE = 0.3


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


def sample_sampling(base: Sampling, sample: int, seed_base: int = 0) -> Sampling:
    """What sample `sample` (0-based) of a case whose own sampling is `base` is sent: seed
    `seed_base + sample`, and PERTURB_TEMPERATURE where `base` is greedy."""
    greedy = not base.temperature
    return Sampling(
        temperature=PERTURB_TEMPERATURE if greedy else base.temperature,
        top_p=base.top_p,
        seed=seed_base + sample,
    )


def sample_settings(
    base: Sampling, samples: int, sent: Sampling | None = None, seed_base: int = 0
) -> SampleSettings:
    """How a suite whose own sampling is `base` is sampled `samples` times. `sent` is the
    first sample as the provider sends it (None in a field its API does not take; default:
    every field), so the record never claims a seed or temperature that was not sent."""
    sent = sent or sample_sampling(base, 0)
    # Only where the perturbed temperature reached the provider.
    perturbed = not base.temperature and sent.temperature is not None
    seeds = list(range(seed_base, seed_base + samples)) if sent.seed is not None else []
    what = "greedy suite sampled" if perturbed else "sampled"
    temperature = "the provider's own" if sent.temperature is None else f"{sent.temperature:g}"
    top_p = "the provider's own" if sent.top_p is None else f"{sent.top_p:g}"
    seed_text = (
        f"seeds {seed_base}..{seed_base + samples - 1}"
        if seeds
        else "no seed (the provider takes none)"
    )
    return SampleSettings(
        samples=samples,
        seeds=seeds,
        temperature=sent.temperature,
        top_p=sent.top_p,
        perturbed=perturbed,
        perturbation=f"{what} at temperature {temperature}, top_p {top_p}, {seed_text}",
    )
