"""All attempts at one case (repeats, crash retries) folded into one CaseResult."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from evalctl.chat import Sampling
from evalctl.providers.base import Provider, sent_sampling
from evalctl.results.models import CaseResult, CheckStatus, PassCount, prompt_ref
from evalctl.retry import RetryPolicy
from evalctl.runner.attempt import AttemptOutcome, CaseSetup, run_attempt, write_repro
from evalctl.runner.sampling import sample_sampling
from evalctl.scoring.verdict import fold_repeats
from evalctl.stats import wilson_interval
from evalctl.tools.spy_functions import spied_calls


def run_case(
    setup: CaseSetup,
    provider: Provider,
    retry: RetryPolicy,
    *,
    repeats: int,
    crash_retries: int,
    run_dir: Path,
    sampled: bool = False,
    seed_base: int = 0,
) -> CaseResult:
    """Run the case `repeats` times. `sampled` (`--samples`): repeat r is sent seed r, and a
    low temperature where the case is greedy (evalctl.runner.sampling); each attempt then
    records what it was sent."""
    case = setup.case
    all_attempts: list[AttemptOutcome] = []
    kept: list[AttemptOutcome] = []  # one per repeat: the last try of that repeat
    crash_repro: Path | None = None
    for sample in range(repeats):
        this = setup
        if sampled:
            this = dataclasses.replace(
                setup, sampling=sample_sampling(setup.sampling, sample, seed_base)
            )
        outcome = _with_crash_retries(this, provider, retry, sampled, crash_retries, all_attempts)
        if outcome.attempt.server_crashed and outcome.last_request is not None:
            crash_repro = write_repro(run_dir, case.key, outcome.last_request)
        kept.append(outcome)

    last = kept[-1]
    status = fold_repeats([o.attempt.status for o in kept])
    scored = [o for o in kept if o.attempt.status in ("pass", "fail")]
    error = next((o.attempt.error for o in reversed(kept) if o.attempt.error), None)
    if crash_repro is not None and error is not None:
        error = f"{error} (repro saved to {crash_repro})"
    usage = kept[0].attempt.usage
    for o in kept[1:]:
        usage = usage + o.attempt.usage
    passes = sum(o.attempt.status == "pass" for o in scored)
    interval = wilson_interval(passes, len(scored)) if scored else None
    return CaseResult(
        key=case.key,
        suite=case.suite,
        id=case.id,
        status=status,
        features=case.features,
        metadata=case.metadata,
        input=case.input.model_dump(mode="json"),
        vars=case.vars,
        attempts=[o.attempt for o in all_attempts],
        pass_rate=round(passes / len(scored), 4) if scored else None,
        pass_ci_low=round(interval.low, 4) if interval else None,
        pass_ci_high=round(interval.high, 4) if interval else None,
        checks=last.checks,
        latency_ms=round(sum(o.attempt.latency_ms for o in kept) / len(kept), 1),
        usage=usage,
        turns=last.attempt.turns,
        tool_calls=last.tool_calls,
        output=last.output,
        system_prompt=prompt_ref(setup.suite.table.system_prompt),
        transcript=last.transcript,
        first_try=status == "pass" and all(o.first_try for o in kept),
        error=error if status == "error" else None,
        server_crashed=any(o.attempt.server_crashed for o in all_attempts),
        tokens_per_s=last.tokens_per_s,
        sampling=last.attempt.sampling,
        check_counts=check_counts(scored) if len(scored) > 1 else {},
    )


def confirmation_attempts(
    setup: CaseSetup,
    provider: Provider,
    retry: RetryPolicy,
    samplings: list[Sampling],
    *,
    crash_retries: int,
) -> tuple[list[AttemptOutcome], dict[str, PassCount]]:
    """One confirmation sample per entry of `samplings` (`run --baseline`, evalctl.runner.
    confirm): every try marked `confirmation`, with what it was sent, and the per-check
    counts over the scored ones. A daemon that died mid-sample is retried like a repeat."""
    tries: list[AttemptOutcome] = []
    kept: list[AttemptOutcome] = []
    for sampling in samplings:
        this = dataclasses.replace(setup, sampling=sampling)
        kept.append(_with_crash_retries(this, provider, retry, True, crash_retries, tries))
    for outcome in tries:
        outcome.attempt.confirmation = True
    scored = [o for o in kept if o.attempt.status in ("pass", "fail")]
    return tries, check_counts(scored)


def _with_crash_retries(
    setup: CaseSetup,
    provider: Provider,
    retry: RetryPolicy,
    sampled: bool,
    crash_retries: int,
    tries: list[AttemptOutcome],
) -> AttemptOutcome:
    """One repeat or sample: every try appended to `tries`, the last one returned. A daemon
    that died mid-case took the conversation with it: the case starts over, up to
    `crash_retries` more times."""
    outcome = _attempt(setup, provider, retry, sampled)
    tries.append(outcome)
    retried = 0
    while outcome.attempt.server_crashed and retried < crash_retries:
        retried += 1
        outcome = _attempt(setup, provider, retry, sampled)
        tries.append(outcome)
    return outcome


def _attempt(
    setup: CaseSetup, provider: Provider, retry: RetryPolicy, sampled: bool
) -> AttemptOutcome:
    # The application's own calls, spied or reported by a target, are logged per attempt.
    with spied_calls(setup.suite, setup.case.vars, setup.case.input.model_dump(mode="json")):
        outcome = run_attempt(setup, provider, retry)
    if sampled:
        outcome.attempt.sampling = sent_sampling(provider, setup.sampling)
    return outcome


def check_counts(scored: list[AttemptOutcome]) -> dict[str, PassCount]:
    """Per check name, how many of the scored repeats had it `pass`, out of those where it
    was `pass` or `fail`; a check that was only ever n/a (or error) is left out."""
    seen: dict[str, list[CheckStatus]] = {}
    for outcome in scored:
        for check in outcome.checks:
            seen.setdefault(check.name, []).append(check.status)
    counts: dict[str, PassCount] = {}
    for name, statuses in seen.items():
        runs = sum(s in ("pass", "fail") for s in statuses)
        if runs:
            counts[name] = PassCount(passed=statuses.count("pass"), runs=runs)
    return counts


def skipped_case(setup: CaseSetup, reason: str) -> CaseResult:
    case = setup.case
    return CaseResult(
        key=case.key,
        suite=case.suite,
        id=case.id,
        status="skipped",
        features=case.features,
        metadata=case.metadata,
        input=case.input.model_dump(mode="json"),
        vars=case.vars,
        skip_reason=reason,
    )
