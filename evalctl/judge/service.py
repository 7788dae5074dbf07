"""The run-scoped judge: picks the judging provider and model, asks, retries, prices, caches.

Which judge grades an assertion, first match wins:

1. the assertion's own `provider` (and `model`, else that provider's default);
2. `[judge] provider` in evalctl.toml (the assertion's `model`, else `[judge] model`);
3. the run's provider, with the assertion's `model`, else `[judge] model`, else the run's
   model. The run's provider instance itself is reused when the model is the same (no second
   local daemon, no second client).

A judge that cannot answer (unavailable, errors after the shared retry policy gave up, out of
time, a reply that is no verdict, a graded reply without a score) yields a `Judgement` with
`error` set: the check becomes `error`, never `fail`. Requests are tagged `<suite>/<id>#judge`,
`<suite>/<id>#judge:<check name>` when a judge assertion asks (evalctl.judge.prompt), which is
how the scripted provider's script tells them from the case's own turns, and from each other.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from evalctl.cases.schema import Suite
from evalctl.chat import CompletionRequest, CompletionResponse
from evalctl.cost import estimate_run_cost
from evalctl.errors import BadInputError, EvalctlError
from evalctl.judge.cache import CachedJudgement, JudgeCache, cache_key
from evalctl.judge.prompt import judge_request, judge_tag, read_reply
from evalctl.providers.base import Provider
from evalctl.providers.options import ProviderOptions
from evalctl.providers.registry import create, traits
from evalctl.scoring.judging import GradeRequest, Judgement, JudgeService, JudgeSetup
from evalctl.secrets import redact


class Judge(JudgeService):
    """The run's judge (a `JudgeService`, evalctl.scoring.judging)."""

    def __init__(self, setup: JudgeSetup):
        settings, env = setup.settings, setup.env
        self._settings = settings
        self._env = env
        self._run_provider = setup.run_provider
        # The run's options (its --script, for a scripted judge), minus the model.
        self._base_options = setup.options or ProviderOptions(settings=settings, env=env)
        self._retry = setup.retry
        self.cache = JudgeCache(settings.home, enabled=setup.cache)
        self._lock = threading.Lock()
        self._created: dict[tuple[str, str | None], Provider] = {}

    # -- which judge ----------------------------------------------------------------------

    def resolve(self, provider: str | None, model: str | None) -> tuple[str, str | None]:
        """(provider name, model or None for that provider's default)."""
        defaults = self._settings.judge
        if provider is not None:
            return provider, model
        if defaults.provider is not None:
            return defaults.provider, model or defaults.model
        return self._run_provider.name, model or defaults.model

    def _provider(self, name: str, model: str | None) -> Provider:
        run = self._run_provider
        if name == run.name and model in (None, run.model):
            return run
        with self._lock:
            key = (name, model)
            if key not in self._created:
                options = ProviderOptions(
                    settings=self._settings,
                    env=self._env,
                    model=model,
                    script=self._base_options.script,
                )
                self._created[key] = create(name, options)
            return self._created[key]

    # -- asking ---------------------------------------------------------------------------

    def grade(self, request: GradeRequest) -> Judgement:
        rubric, case_input, answer = request.rubric, request.case_input, request.answer
        name, wanted_model = self.resolve(request.provider, request.model)
        try:
            judge = self._provider(name, wanted_model)
        except EvalctlError as exc:
            return Judgement(name, wanted_model or "", error=redact(f"no judge: {exc}", self._env))
        graded = request.graded
        key = cache_key(name, judge.model, rubric, case_input, answer, graded=graded)
        # A stand-in judge (a reply script) answers from a file that may have changed since
        # its verdict was stored, and costs nothing to ask: never cached.
        cached = traits(judge.name).real
        hit = self.cache.get(key) if cached else None
        # Under a graded key only scored judgements are stored; one without (edited by hand)
        # must not become a graded check with no score.
        if hit is not None and (hit.score is not None or not graded):
            return Judgement(
                hit.provider,
                hit.model,
                verdict=hit.verdict,
                reason=hit.reason,
                score=hit.score if graded else None,
                reply=hit.reply,
                usage=hit.usage,
                cost_usd=hit.cost_usd,
                cached=True,
            )
        tag = judge_tag(request.case_key, request.check_name)
        asked = judge_request(rubric, case_input, answer, tag=tag, graded=graded)
        judgement = self._ask(judge, asked, graded=graded)
        if judgement.verdict is not None and cached:
            self.cache.put(
                key,
                CachedJudgement(
                    verdict=judgement.verdict,
                    reason=judgement.reason,
                    score=judgement.score,
                    reply=judgement.reply,
                    provider=judgement.provider,
                    model=judgement.model,
                    usage=judgement.usage,
                    cost_usd=judgement.cost_usd,
                ),
            )
        return judgement

    def _ask(self, judge: Provider, request: CompletionRequest, *, graded: bool) -> Judgement:
        deadline = time.monotonic() + self._settings.judge.timeout_s
        try:
            response = self._retry.call(partial(_complete_by, judge, request, deadline))
        except EvalctlError as exc:
            return Judgement(
                judge.name, judge.model, error=redact(f"the judge failed: {exc}", self._env)
            )
        model = response.model or judge.model
        cost = estimate_run_cost(judge.name, model, response.usage, self._settings)
        reply = redact(response.content, self._env)
        outcome = Judgement(judge.name, model, reply=reply, usage=response.usage, cost_usd=cost)
        if response.stop_reason == "timeout":
            outcome.error = "the judge ran out of time"
            return outcome
        reading = read_reply(response.content, graded=graded)
        if isinstance(reading, str):
            outcome.error = reading
        else:
            outcome.verdict, outcome.score = reading.verdict, reading.score
            outcome.reason = redact(reading.reason, self._env)
        return outcome

    def script_problems(
        self, script: Path, suites: Sequence[Suite], run_provider: str | None = None
    ) -> list[BadInputError]:
        """The judge assertions of `suites` a scripted run's reply script leaves unanswered
        (evalctl.judge.script_replies), so the run refuses it before its first case, as
        `cases validate --script` does, instead of ending each judged case in `error`."""
        from evalctl.judge.script_replies import judge_reply_problems
        from evalctl.providers.scripted import load_script

        return judge_reply_problems(
            load_script(script), script, suites, self._settings.judge.provider, run_provider
        )

    def close(self) -> None:
        with self._lock:
            created, self._created = list(self._created.values()), {}
        for provider in created:
            provider.close()


def _complete_by(
    provider: Provider, request: CompletionRequest, deadline: float
) -> CompletionResponse:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TransientJudgeTimeout("no time left for the judge")
    return provider.complete(request, timeout=remaining)


class TransientJudgeTimeout(EvalctlError):
    """The judgement's time budget ran out (not retried: there is no time to retry in)."""
