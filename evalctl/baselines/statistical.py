"""The statistical gate rule (`compare --gate statistical`, the default): a drop in a case's
or a check's pass rate gates only when it is unlikely to be sampling noise.

Per suite, each case of the baseline that the run scored is one stratum of
`evalctl.gatestats.gate`: the baseline's pass count (`pass_counts`, written for every case of
a sampled baseline) against the run's (`CaseResult.pass_counts()`). A baseline without
counts (schema 1 and 2, or one not sampled) counts as one sample: pass 1/1, fail 0/1; a
flaky case without counts cannot be weighed and stays on `baselines.changes` (it never
gates). Each check is a stratum of its own: `check_counts` where both sides have them, else
the check's status as one sample, gated with `suite_level=False` (the checks of one case are
not independent, which the suite tests' exact nulls need; gatestats says more).

Everything is decided when the rule is built, since the multiplicity control and the suite
tests weigh the whole suite at once; `case_change` and `check_change` then look up the
verdict, and `evidence` says what it rests on.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

from evalctl import gatestats
from evalctl.baselines.changes import Change, Counts, classify
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


def _evidence(verdicts: gatestats.SuiteVerdict) -> Iterator[tuple[str, Evidence]]:
    for v in verdicts.cases:
        s = v.stratum
        yield (
            s.key,
            Evidence(
                baseline=(s.baseline_passes, s.baseline_n),
                run=(s.run_passes, s.run_m),
                p_value=v.p_value,
                adjusted_p_value=v.adjusted_p_value,
                change=v.change,
                cause=v.cause,
                text=_describe(v, verdicts),
            ),
        )


def _check_counts(status: CheckStatus, counts: Counts | None) -> Counts | None:
    """A check's counts, else its one status as one sample; None for n/a and error."""
    if counts is not None:
        return counts if counts[1] > 0 else None
    return _ONE_SAMPLE.get(status)


def _run_counts(case: CaseResult) -> Counts | None:
    """The case's scored attempts, else (a file without attempts) its status as one sample."""
    counts = case.pass_counts()
    if counts[1] > 0:
        return counts
    return None if case.attempts else _ONE_SAMPLE.get(case.status)


def _check_key(key: str, check: str) -> str:
    return f"{key}\0{check}"


class StatisticalRule:
    """Gates a drop only when an exact test at `alpha` says it is more than noise."""

    name = "statistical"

    def __init__(self, baseline: Baseline, run: RunResult, alpha: float = DEFAULT_ALPHA) -> None:
        self.alpha = alpha
        self._evidence: dict[str, Evidence] = {}
        self.suites: dict[str, SuiteStats] = {}
        case_strata: dict[str, list[gatestats.Stratum]] = defaultdict(list)
        check_strata: dict[str, list[gatestats.Stratum]] = defaultdict(list)
        for case in run.cases:
            expected = baseline.baselines.get(case.key)
            before = self._case_counts(baseline, case.key, expected)
            after = _run_counts(case)
            if expected is None or after is None:
                continue
            suite = _suite_of(case.key)
            if before is not None:
                case_strata[suite].append(gatestats.Stratum(case.key, *_flat(before, after)))
            for stratum in self._check_strata(baseline, case):
                check_strata[suite].append(stratum)
        for suite in sorted(set(case_strata) | set(check_strata)):
            cases = gatestats.gate(case_strata[suite], alpha)
            checks = gatestats.gate(check_strata[suite], alpha, suite_level=False)
            self._evidence.update(_evidence(cases))
            self._evidence.update(_evidence(checks))
            self.suites[suite] = SuiteStats(
                cases=len(cases.cases),
                informative=sum(1 for v in cases.cases if v.stratum.informative),
                case_alpha=cases.case_alpha,
                tests=[
                    SuiteTestReport(
                        name=t.name,
                        statistic=t.statistic,
                        expected=round(t.expected, 6),
                        p_value=t.p_value,
                        alpha=t.alpha,
                        fired=t.fired,
                        strata=t.strata,
                    )
                    for t in cases.suite_tests
                ],
                checks=len(checks.cases),
                check_alpha=checks.case_alpha,
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
    def _check_strata(baseline: Baseline, case: CaseResult) -> Iterator[gatestats.Stratum]:
        counted = baseline.check_counts.get(case.key, {})
        statuses = baseline.checks.get(case.key, {})
        for check in case.checks:
            was = counted.get(check.name)
            before = (
                was.as_tuple()
                if was is not None
                else _check_counts(statuses.get(check.name, "n/a"), None)
            )
            now = case.check_counts.get(check.name)
            after = _check_counts(check.status, now.as_tuple() if now is not None else None)
            if before is None or after is None:
                continue
            key = _check_key(case.key, check.name)
            yield gatestats.Stratum(key, *_flat(before, after))

    def case_change(
        self, before: BaselineStatus, before_counts: Counts | None, case: CaseResult
    ) -> GateChange:
        found = self._evidence.get(case.key)
        if found is None:
            # Not weighed: an unscored case, or a flaky baseline without counts (never gates).
            return classify(before, case.status, before_counts, case.pass_counts())
        return found.change

    def check_change(self, key: str, before: CheckStatus, check: CheckResult) -> GateChange:
        found = self._evidence.get(_check_key(key, check.name))
        return "unchanged" if found is None else found.change

    def evidence(self, key: str, check: str | None = None) -> Evidence | None:
        return self._evidence.get(key if check is None else _check_key(key, check))


def _flat(before: Counts, after: Counts) -> tuple[int, int, int, int]:
    """Stratum's (baseline_n, baseline_passes, run_m, run_passes) from two (passed, runs)."""
    return before[1], before[0], after[1], after[0]
