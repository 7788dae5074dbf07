"""The judge as a service checks use: what a judgement is, what a judge offers, and what the
run hands the plugin that makes one (evalctl.judge registers it).

The run's judge reaches checks as `ScoringContext.judge` (evalctl.scoring.check), typed,
never through a resource key.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from evalctl.cases.schema import Suite
from evalctl.chat import Usage
from evalctl.config import Settings
from evalctl.errors import BadInputError
from evalctl.providers.base import Provider
from evalctl.providers.options import ProviderOptions
from evalctl.retry import RetryPolicy


@dataclass
class Judgement:
    """A judge's answer to one rubric; `error` set (and no verdict) when it could not answer.
    `score` (0 to 1) is set when the request was graded, and only then."""

    provider: str
    model: str
    verdict: Literal["pass", "fail"] | None = None
    reason: str = ""
    reply: str = ""
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    cached: bool = False
    error: str | None = None
    # Last, so a judge plugin building a Judgement by position is unaffected.
    score: float | None = None


@dataclass(frozen=True)
class GradeRequest:
    """One question to the judge: does `answer`, given `case_input`, meet `rubric`? The
    check's own `provider`/`model`, when set, pick the judge. `graded` asks for a score from
    0 to 1 as well (a judge that gives none has not answered). `check_name`, for a judge
    assertion of the case, addresses the request to that check (a reply script's
    `#judge:<check name>`)."""

    rubric: str
    case_input: str
    answer: str
    case_key: str
    provider: str | None = None
    model: str | None = None
    graded: bool = False
    check_name: str | None = None


class JudgeService(ABC):
    """The base of the run's judge: grades an answer against a rubric. `grade` is required;
    the other hooks have defaults. A judge factory's judge that does not inherit is adapted
    once, when the factory is registered (evalctl.plugin_adapt)."""

    @abstractmethod
    def grade(self, request: GradeRequest) -> Judgement:
        """The verdict on one answer."""

    def close(self) -> None:
        """Let go of what the judge holds (its provider, its cache). Default: nothing."""
        return None

    def script_problems(
        self, script: Path, suites: Sequence[Suite], run_provider: str | None = None
    ) -> list[BadInputError]:
        """The judge assertions a run's reply script leaves unanswered (or that would fall
        back to an application target): the run refuses such a script before its first case
        (exit 2). Default: none."""
        return []


@dataclass(frozen=True)
class JudgeSetup:
    """What a run offers its judge: settings, the run's provider (reused when the judge is
    the same model) and options (a scripted run's --script), the retry policy, and whether
    verdicts are cached (`--no-judge-cache`)."""

    settings: Settings
    env: Mapping[str, str]
    run_provider: Provider
    # None: the settings and environment alone (no script).
    options: ProviderOptions | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    cache: bool = True


JudgeFactory = Callable[[JudgeSetup], JudgeService]
