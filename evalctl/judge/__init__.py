"""Model-graded checks: a judge model grades an answer against a rubric.

`prompt` builds the judge's request and reads its verdict, `cache` keeps verdicts under
EVALCTL_HOME so a re-run costs nothing, `service` is the run-scoped judge (which provider and
model, retries, cost), and `check` is the `judge` assertion type of `assert` suites.

A built-in plugin (evalctl.builtin_plugins): `register` adds the `judge` check and the
factory of the run's judge, through the same API as any plugin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evalctl.plugin import Registry
    from evalctl.scoring.judging import JudgeService, JudgeSetup


def _make_judge(setup: JudgeSetup) -> JudgeService:
    # Imported when a run starts: the service pulls in cost and the provider registry.
    from evalctl.judge.service import Judge

    return Judge(setup)


def register(registry: Registry) -> None:
    from evalctl.judge.check import CHECK

    registry.add_check(CHECK.type_name, CHECK)
    registry.set_judge(_make_judge)
