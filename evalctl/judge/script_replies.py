"""Does a reply script answer every judge assertion a run will ask it about?

`evalctl cases validate --script` asks, and so does `run --script` before its first case
(through the judge's `script_problems`), so that a script without judge replies fails at
once (exit 2, naming the case and the check) rather than every judged case ending in
error. A judge assertion is answered by the script when its addressed key
(`suite/id#judge:<check name>`, or the bare id's) or its case's plain `#judge` key has
replies, or else when the script's `default` reply is itself a verdict the judge would
accept (with a score, for a graded one). Judges the script never sees are skipped: those with their
own `provider`, or all of them when evalctl.toml's `[judge]` names one other than `scripted`.

An addressed key whose check name is no judge assertion of its case is a problem too: the
typo would otherwise fall back to the plain reply without a word.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalctl.cases.schema import Suite
from evalctl.errors import BadInputError
from evalctl.judge.check import JudgeParams, judge_checks
from evalctl.judge.prompt import JUDGE_TAG_SUFFIX, judge_tag, read_reply
from evalctl.providers.registry import traits
from evalctl.providers.scripted import Script, reply_keys

# What a judge asks when nothing names a provider: `cases validate --script` checks the
# script as the scripted provider would replay it.
SCRIPTED = "scripted"


def judge_reply_problems(
    script: Script,
    path: Path,
    suites: Sequence[Suite],
    judge_provider: str | None = None,
    run_provider: str | None = None,
) -> list[BadInputError]:
    """Every judge assertion the script leaves unanswered, and every addressed key naming no
    judge assertion; `judge_provider` is evalctl.toml's `[judge] provider`, `run_provider`
    the run's (None: each suite's own, its first target where it declares one, else the
    scripted provider). A judge that would fall back to an application target cannot be
    answered at all."""
    problems = _unanswered(script, path, suites, judge_provider, run_provider)
    problems.extend(_misaddressed(script, path, suites))
    return problems


def _default_problem(script: Script, graded: bool) -> str | None:
    """Why the script's default reply would not do as this judge's verdict; None if it would."""
    if not script.default:
        return "the script has no default"
    first = script.default[0]  # a judge request has no assistant turn: the first reply
    if first.error is not None:
        return f"its default reply is an injected {first.error!r} fault"
    reading = read_reply(first.content, graded=graded)
    return f"its default reply is no verdict: {reading}" if isinstance(reading, str) else None


def _unanswered(
    script: Script,
    path: Path,
    suites: Sequence[Suite],
    judge_provider: str | None,
    run_provider: str | None,
) -> list[BadInputError]:
    problems = []
    for suite in suites:
        runs_on = run_provider or (suite.table.target[0].type if suite.table.target else None)
        for case in suite.cases:
            for spec, name in judge_checks(suite.table, case):
                assert isinstance(spec.params, JudgeParams)
                asked = spec.params.provider or judge_provider or runs_on or SCRIPTED
                # An application target has no model to ask.
                if traits(asked).application:
                    problems.append(
                        BadInputError(
                            f"judge check {name!r} has no judge: it would ask the run's "
                            f"provider, the {asked} target, which is your application, not a "
                            "model; name one with [judge] provider in evalctl.toml (scripted "
                            "answers from this script) or the assertion's `provider`",
                            file=str(path),
                            case_id=case.key,
                            field="cases",
                        )
                    )
                    continue
                if not traits(asked).replays_script:
                    continue
                tag = judge_tag(case.key, name)
                if any(script.cases.get(key) for key in reply_keys(tag)):
                    continue
                why_not_default = _default_problem(script, spec.params.threshold is not None)
                if why_not_default is None:
                    continue
                problems.append(
                    BadInputError(
                        f"judge check {name!r} gets no reply from the script: add "
                        f'[[cases."{tag}"]] (this check) or '
                        f'[[cases."{case.key}{JUDGE_TAG_SUFFIX}"]] (every judge of the case); '
                        f"{why_not_default}",
                        file=str(path),
                        case_id=case.key,
                        field="cases",
                    )
                )
    return problems


def _misaddressed(script: Script, path: Path, suites: Sequence[Suite]) -> list[BadInputError]:
    problems = []
    for key in script.cases:
        head, hash_sign, side = key.partition("#")
        kind, colon, name = side.partition(":")
        if hash_sign + kind != JUDGE_TAG_SUFFIX or not colon:
            continue
        cases = [(s.table, c) for s in suites for c in s.cases if head in (c.key, c.id)]
        if not cases:
            continue  # a key matching no case at all is reported on its own
        names = sorted({n for table, c in cases for _, n in judge_checks(table, c)})
        if name not in names:
            known = ", ".join(map(repr, names)) or "none"
            problems.append(
                BadInputError(
                    f"{key!r} addresses no judge check of its case (its judge checks: {known})",
                    file=str(path),
                    field="cases",
                )
            )
    return problems
