"""The statistical gate rule (`compare --gate statistical`, the default): a drop in a case's
or a check's pass rate gates only when it is unlikely to be sampling noise.

Per suite, each case of the baseline that the run scored is one stratum of
`evalctl.gatestats.gate`: the baseline's pass count (`pass_counts`, written for every case of
a sampled baseline) against the run's (`CaseResult.pass_counts()`). A baseline without
counts (schema 1 and 2, or one not sampled) counts as one sample: pass 1/1, fail 0/1; a
flaky case without counts cannot be weighed and stays on `baselines.changes` (it never
gates). Each check is a stratum of its own: `check_counts` where both sides have them, else
the check's status as one sample, gated with `gatestats.gate_checks`: the checks of one case
are not independent, so the suite's check test takes each case's checks as one unit
(gatestats says more).

Everything is decided when the rule is built, since the multiplicity control and the suite
tests weigh the whole suite at once; `case_change` and `check_change` then look up the
verdict, and `evidence` says what it rests on.

A case no model answered (a `retrieval` suite's direct tool calls: no turn in any attempt)
has no sampling noise to weigh: the same tool gives the same rows. Such cases are decided
by the strict rule instead, so one broken retrieval case gates even against a one-sample
baseline, and they enter no suite test.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from evalctl import gatestats
from evalctl.baselines.changes import Change, Counts, check_transition, classify
from evalctl.baselines.comparison import SuiteStats, SuiteTestReport
from evalctl.baselines.model import Baseline, BaselineStatus
from evalctl.results.models import CaseResult, CheckResult, CheckStatus, RunResult

GateChange = Change | gatestats.Change
DEFAULT_ALPHA = 0.05
_ONE_SAMPLE: dict[str, Counts] = {"pass": (1, 1), "fail": (0, 1)}
# Readable names for the suite tests in a regression's evidence.
_TEST_NAMES = {
    gatestats.STRATIFIED: "stratified McNemar",
    gatestats.FLIPS: "clean-baseline flips",
    gatestats.CHECK_FLIPS: "clean-baseline check flips",
}


@dataclass(frozen=True)
class Evidence:
    """What the statistical verdict on one case or check rests on."""

    baseline: Counts
    run: Counts
    p_value: float
    adjusted_p_value: float
    change: gatestats.Change
    cause: gatestats.Cause | None
    # `5/5 -> 0/1, p = 0.17`, and for a regression the test that made it one.
    text: str


def _suite_of(key: str) -> str:
    return key.partition("/")[0]


def _p(value: float) -> str:
    return f"{value:.2g}"


def _rates(s: gatestats.Stratum) -> str:
    return f"{s.baseline_passes}/{s.baseline_n} -> {s.run_passes}/{s.run_m}"


def _describe(verdict: gatestats.CaseVerdict, suite: gatestats.SuiteVerdict) -> str:
    if verdict.change == "improvement":
        return _rates(verdict.stratum)  # a rise is not tested: a drop's p-value means nothing
    text = f"{_rates(verdict.stratum)}, p = {_p(verdict.p_value)}"
    if verdict.change != "regression":
        return text
    if verdict.cause == "suite":
        fired = [t for t in suite.suite_tests if t.fired]
        tests = "; ".join(
            f"the suite's {_TEST_NAMES.get(t.name, t.name)} test: p = {_p(t.p_value)} "
            f"<= {_p(t.alpha)}"
            for t in fired
        )
        return f"{text}; {tests}"
    return f"{text}; its own test: adjusted p = {_p(verdict.adjusted_p_value)} <= " + _p(
        suite.case_alpha
    )


def _run_counts(case: CaseResult) -> Counts | None:
    """The case's scored attempts, else (a file without attempts) its status as one sample."""
    counts = case.pass_counts()
    if counts[1] > 0:
        return counts
    return None if case.attempts else _ONE_SAMPLE.get(case.status)


def _check_key(key: str, check: str) -> str:
    return f"{key}\0{check}"


def _report(test: gatestats.SuiteTest) -> SuiteTestReport:
    return SuiteTestReport(
        name=test.name,
        statistic=test.statistic,
        expected=round(test.expected, 6),
        p_value=test.p_value,
        alpha=test.alpha,
        fired=test.fired,
        strata=test.strata,
    )


def _informative(before: Counts, after: Counts) -> bool:
    """Whether the samples disagree (gatestats' `Stratum.informative`, without building one):
    a stratum whose samples all agree enters no test and keeps its rate, so it is unchanged."""
    passes, samples = before[0] + after[0], before[1] + after[1]
    return 0 < passes < samples


class StatisticalRule:
    """Gates a drop only when an exact test at `alpha` says it is more than noise."""

    name = "statistical"

    def __init__(self, baseline: Baseline, run: RunResult, alpha: float = DEFAULT_ALPHA) -> None:
        self.alpha = alpha
        self.suites: dict[str, SuiteStats] = {}
        # Only strata whose samples disagree go to gatestats (the rest are unchanged and
        # enter no test either way): a 10,000-case run is mostly such cases and checks.
        self._verdicts: dict[str, tuple[gatestats.CaseVerdict, gatestats.SuiteVerdict]] = {}
        self._weighed: set[str] = set()
        case_strata: dict[str, list[gatestats.Stratum]] = defaultdict(list)
        # Per suite, per case: the checks of one case are one unit of the suite's check test.
        check_strata: dict[str, dict[str, list[gatestats.Stratum]]] = defaultdict(dict)
        weighed_cases: dict[str, int] = defaultdict(int)
        weighed_checks: dict[str, int] = defaultdict(int)
        self._model_free = {case.key for case in run.cases if _model_free(case)}
        for case in run.cases:
            expected = baseline.baselines.get(case.key)
            after = _run_counts(case)
            if expected is None or after is None or case.key in self._model_free:
                continue
            suite = _suite_of(case.key)
            before = self._case_counts(baseline, case.key, expected)
            if before is not None:
                self._weighed.add(case.key)
                weighed_cases[suite] += 1
                if _informative(before, after):
                    case_strata[suite].append(gatestats.Stratum(case.key, *_flat(before, after)))
            for name, check_before, check_after in self._check_counts(baseline, case):
                weighed_checks[suite] += 1
                if _informative(check_before, check_after):
                    key = _check_key(case.key, name)
                    check_strata[suite].setdefault(case.key, []).append(
                        gatestats.Stratum(key, *_flat(check_before, check_after))
                    )
        for suite in sorted(set(weighed_cases) | set(weighed_checks)):
            cases = gatestats.gate(case_strata[suite], alpha)
            checks = gatestats.gate_checks(list(check_strata[suite].values()), alpha)
            for verdicts in (cases, checks):
                self._verdicts.update((v.stratum.key, (v, verdicts)) for v in verdicts.cases)
            self.suites[suite] = SuiteStats(
                cases=weighed_cases[suite],
                informative=len(cases.cases),
                case_alpha=cases.case_alpha,
                tests=[_report(t) for t in cases.suite_tests],
                checks=weighed_checks[suite],
                check_alpha=checks.case_alpha,
                check_tests=[_report(t) for t in checks.suite_tests],
            )

    @staticmethod
    def _case_counts(
        baseline: Baseline, key: str, expected: BaselineStatus | None
    ) -> Counts | None:
        counts = baseline.pass_counts.get(key)
        if counts is not None:
            return counts.as_tuple()
        return _ONE_SAMPLE.get(expected or "")

    @staticmethod
    def _check_counts(baseline: Baseline, case: CaseResult) -> Iterator[tuple[str, Counts, Counts]]:
        """(name, baseline counts, run counts) of each check both sides can weigh: its
        counts, else its status as one sample (n/a and error: none)."""
        counted = baseline.check_counts.get(case.key, {})
        statuses = baseline.checks.get(case.key, {})
        now_counted = case.check_counts
        for check in case.checks:
            name = check.name
            was = counted.get(name)
            before = was.as_tuple() if was is not None else _ONE_SAMPLE.get(statuses.get(name, ""))
            now = now_counted.get(name)
            after = now.as_tuple() if now is not None else _ONE_SAMPLE.get(check.status)
            if before is not None and after is not None:
                yield name, before, after

    def case_change(
        self, before: BaselineStatus, before_counts: Counts | None, case: CaseResult
    ) -> GateChange:
        if case.key in self._model_free:
            return classify(before, case.status, before_counts, case.pass_counts())
        found = self._verdicts.get(case.key)
        if found is not None:
            return found[0].change
        if case.key in self._weighed:
            return "unchanged"
        # Not weighed: an unscored case, or a flaky baseline without counts (never gates).
        return classify(before, case.status, before_counts, case.pass_counts())

    def check_change(self, key: str, before: CheckStatus, check: CheckResult) -> GateChange:
        if key in self._model_free:
            return check_transition(before, check.status)
        found = self._verdicts.get(_check_key(key, check.name))
        return "unchanged" if found is None else found[0].change

    def evidence(self, key: str, check: str | None = None) -> Evidence | None:
        found = self._verdicts.get(key if check is None else _check_key(key, check))
        if found is None:
            return None
        verdict, suite = found
        s = verdict.stratum
        return Evidence(
            baseline=(s.baseline_passes, s.baseline_n),
            run=(s.run_passes, s.run_m),
            p_value=verdict.p_value,
            adjusted_p_value=verdict.adjusted_p_value,
            change=verdict.change,
            cause=verdict.cause,
            text=_describe(verdict, suite),
        )


def _model_free(case: CaseResult) -> bool:
    """Scored on tool calls no model asked for (a retrieval case): tools ran, yet no
    attempt took a turn. Both are needed: a case that errored before its first turn also
    took none."""
    return (
        case.status in ("pass", "fail")
        and bool(case.tool_calls)
        and bool(case.attempts)
        and all(attempt.turns == 0 for attempt in case.attempts)
    )


def _flat(before: Counts, after: Counts) -> tuple[int, int, int, int]:
    """Stratum's (baseline_n, baseline_passes, run_m, run_passes) from two (passed, runs)."""
    return before[1], before[0], after[1], after[0]
