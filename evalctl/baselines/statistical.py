"""The gate's rules, case by case: exact where nothing is random, strict where a suite asks
for it, statistical elsewhere, all under one false-alarm budget (`baselines.budget`).

Which rule judges a case:

* **exact**: its answers cannot vary between samples (`CaseResult.deterministic`: the
  scripted provider, a case no model answers such as `retrieval`, a provider or target
  declared deterministic; or `CaseResult.driven_by == "tools"`: its kind drove it with
  tool calls, no model asked; a file from before either was recorded is upgraded when read,
  evalctl.results.versions). Any pass -> fail is a regression, whatever the baseline's K,
  and it spends none of the budget: nothing changes by chance.
* **strict**: the suite says `gate = "strict"` (or `compare --gate strict` for every suite
  that does not say otherwise): the status transitions of `baselines.changes`.
* **statistical**: the rest. A drop gates only when an exact test says it is more than noise.

The statistical rule has two ways to weigh a drop, chosen by what the run holds:

* **confirmation** (a run made with `run --baseline`, evalctl.runner.confirm): every case
  whose pass rate dropped was re-sampled with fresh seeds, and each case's baseline samples
  are tested against its confirmation samples alone with the exact unconditional test of
  `evalctl.confirmstats` (the first samples enter only as the selection they made). All the
  run's tested cases form one Holm family at the cases' share of the budget, all its tested
  checks another at the checks' share, whatever suite they belong to.
* **suite tests** (any other run): the run's own samples, with `evalctl.gatestats` per suite
  (per-case Fisher tests with Holm, the stratified McNemar and clean-baseline flip tests);
  each suite gets an equal part of the cases' and of the checks' share.

A baseline without counts counts as one sample: pass 1/1, fail 0/1; a flaky case without
counts cannot be weighed and stays on `baselines.changes` (it never gates). Checks are
weighed like cases inside a case whose own rate held; a check that regressed inside a case
that dropped within noise makes the case a regression (cause `check`), so the case and its
checks name the same cases.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from evalctl import confirmstats, gatestats
from evalctl.baselines.budget import DEFAULT_ALPHA, Budget
from evalctl.baselines.changes import Change, check_transition, classify
from evalctl.baselines.comparison import ConfirmationReport, SuiteStats, SuiteTestReport
from evalctl.baselines.model import Baseline, BaselineStatus
from evalctl.results.models import CaseResult, CheckResult, CheckStatus, RunResult
from evalctl.stats import ONE_SAMPLE, Counts, rate_above, rate_below

__all__ = ["DEFAULT_ALPHA", "Evidence", "GateChange", "StatisticalRule"]

GateChange = Change | gatestats.Change
Judge = str  # "statistical" | "exact" | "strict"
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
    cause: str | None
    # `5/5 -> 0/1, p = 0.17`, and for a regression the test that made it one.
    text: str
    # With confirmation samples: `confirmed`, `not confirmed` or `not re-sampled`.
    confirmation: str | None = None


class GateRule(ABC):
    """The base of a gate rule: decides, for one case or one check, what changed since the
    baseline. `case_change` and `check_change` are required; every other member has its
    default here (a rule that weighs nothing statistically reports no alpha, no suite
    tests, no confirmation and the default budget)."""

    name: str
    # The false-alarm rate it gates at; None for a rule that runs no test.
    alpha: float | None = None
    # The exit code's false-alarm budget, shared with the metric gates.
    budget: Budget = Budget()
    # Per suite, what its tests found; per suite, the rule that judged it.
    suites: Mapping[str, SuiteStats] = MappingProxyType({})
    rules: Mapping[str, str] = MappingProxyType({})
    # What the confirmation samples showed (a run made with `run --baseline`).
    confirmation: ConfirmationReport | None = None

    @abstractmethod
    def case_change(
        self, before: BaselineStatus, before_counts: Counts | None, case: CaseResult
    ) -> GateChange:
        """What changed for one case."""

    @abstractmethod
    def check_change(self, key: str, before: CheckStatus, check: CheckResult) -> GateChange:
        """What changed for one check of a case."""

    def evidence(self, key: str, check: str | None = None) -> Evidence | None:
        """The figures a decision rests on (p-values, both rates). Default: none."""
        return None

    def judged_by(self, key: str) -> str:
        """Which rule decided this case: `statistical`, `exact` or `strict`. Default: the
        rule's own name."""
        return self.name


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
    """The case's scored run samples; None when it has none."""
    counts = case.pass_counts()
    return counts if counts[1] > 0 else None


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


def exact_case(case: CaseResult, run: RunResult) -> bool:
    """Whether the case's answers cannot vary between samples (the module docstring)."""
    return case.deterministic or case.driven_by == "tools"


@dataclass
class _Tested:
    """One case the statistical rule weighs, with its checks."""

    case: CaseResult
    before: Counts
    after: Counts
    checks: list[tuple[str, Counts, Counts]]


class StatisticalRule(GateRule):
    """Decides each case by its rule (the module docstring); `default` is the rule of a
    case that is not exact and whose suite names none: `statistical` or `strict`."""

    name = "statistical"

    def __init__(
        self,
        baseline: Baseline,
        run: RunResult,
        alpha: float = DEFAULT_ALPHA,
        *,
        default: Judge = "statistical",
    ) -> None:
        self.name = default
        self.alpha = alpha
        self.budget = Budget(alpha)
        self.suites: dict[str, SuiteStats] = {}
        self.rules: dict[str, str] = {}
        self.confirmation: ConfirmationReport | None = None
        self._verdicts: dict[str, Evidence] = {}
        self._judge: dict[str, Judge] = {}
        self._weighed: set[str] = set()
        tested: list[_Tested] = []
        for case in run.cases:
            judge = self._judge_of(case, run, default)
            self._judge[case.key] = judge
            expected = baseline.baselines.get(case.key)
            after = _run_counts(case)
            if judge != "statistical" or expected is None or after is None:
                continue
            before = _case_counts(baseline, case.key, expected)
            checks = list(_check_counts(baseline, case))
            if before is None and not checks:
                continue
            if before is not None:
                self._weighed.add(case.key)
            tested.append(_Tested(case, before or (0, 0), after, checks))
        self._describe_rules(run, baseline)
        confirm = run.settings.confirm
        if confirm is not None and confirm.samples > 0:
            self._by_confirmation(tested, run)
        else:
            self._by_suite_tests(tested)

    @staticmethod
    def _judge_of(case: CaseResult, run: RunResult, default: Judge) -> Judge:
        if exact_case(case, run):
            return "exact"
        return run.settings.gate_rules.get(case.suite) or default

    def _describe_rules(self, run: RunResult, baseline: Baseline) -> None:
        per_suite: dict[str, dict[Judge, int]] = defaultdict(lambda: defaultdict(int))
        for case in run.cases:
            if case.key in baseline.baselines:
                per_suite[case.suite][self._judge[case.key]] += 1
        for suite, counts in sorted(per_suite.items()):
            if len(counts) == 1:
                self.rules[suite] = next(iter(counts))
                continue
            main = max(counts, key=lambda j: (counts[j], j))
            others = ", ".join(f"{j} ({counts[j]} cases)" for j in sorted(counts) if j != main)
            self.rules[suite] = f"{main} + {others}"

    # -- suite tests: the run's own samples -------------------------------------------------

    def _by_suite_tests(self, tested: list[_Tested]) -> None:
        case_strata: dict[str, list[gatestats.Stratum]] = defaultdict(list)
        check_strata: dict[str, dict[str, list[gatestats.Stratum]]] = defaultdict(dict)
        weighed_cases: dict[str, int] = defaultdict(int)
        weighed_checks: dict[str, int] = defaultdict(int)
        for t in tested:
            suite = t.case.suite
            if t.case.key in self._weighed:
                weighed_cases[suite] += 1
                if _informative(t.before, t.after):
                    case_strata[suite].append(
                        gatestats.Stratum(t.case.key, *_flat(t.before, t.after))
                    )
            for name, was, now in t.checks:
                weighed_checks[suite] += 1
                if _informative(was, now):
                    check_strata[suite].setdefault(t.case.key, []).append(
                        gatestats.Stratum(_check_key(t.case.key, name), *_flat(was, now))
                    )
        suites = sorted(set(weighed_cases) | set(weighed_checks))
        # One budget for the exit code: each suite gets an equal part of each family's share.
        case_alpha = self.budget.cases / max(len(suites), 1)
        check_alpha = self.budget.checks / max(len(suites), 1)
        for suite in suites:
            cases = gatestats.gate(case_strata[suite], case_alpha)
            checks = gatestats.gate_checks(list(check_strata[suite].values()), check_alpha)
            for verdicts in (cases, checks):
                for v in verdicts.cases:
                    s = v.stratum
                    self._verdicts[s.key] = Evidence(
                        baseline=(s.baseline_passes, s.baseline_n),
                        run=(s.run_passes, s.run_m),
                        p_value=v.p_value,
                        adjusted_p_value=v.adjusted_p_value,
                        change=v.change,
                        cause=v.cause,
                        text=_describe(v, verdicts),
                    )
            self.suites[suite] = SuiteStats(
                cases=weighed_cases[suite],
                informative=len(cases.cases),
                case_alpha=cases.case_alpha,
                tests=[_report(t) for t in cases.suite_tests],
                checks=weighed_checks[suite],
                check_alpha=checks.case_alpha,
                check_tests=[_report(t) for t in checks.suite_tests],
            )
        self._promote_check_regressions()

    # -- confirmation: the baseline against fresh samples of what dropped -------------------

    def _by_confirmation(self, tested: list[_Tested], run: RunResult) -> None:
        confirm = run.settings.confirm
        assert confirm is not None
        report = ConfirmationReport(
            samples=confirm.samples, baseline_samples=confirm.baseline_samples
        )
        cases: list[tuple[str, Counts, Counts, confirmstats.Outcome | None]] = []
        checks: list[tuple[str, Counts, Counts, confirmstats.Outcome | None]] = []
        per_suite: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for t in tested:
            first_like = confirm.first_like_baseline.get(t.case.suite, False)
            if t.case.key in self._weighed:
                per_suite[t.case.suite][0] += 1
                again = t.case.confirmation_counts()
                cases.append(
                    (t.case.key, t.before, t.after, _outcome(t.before, t.after, again, first_like))
                )
            for name, was, now in t.checks:
                per_suite[t.case.suite][1] += 1
                counted = t.case.confirmation_check_counts.get(name)
                again_check = counted.as_tuple() if counted is not None else (0, 0)
                checks.append(
                    (
                        _check_key(t.case.key, name),
                        was,
                        now,
                        _outcome(was, now, again_check, first_like),
                    )
                )
        self._confirmed_family(cases, self.budget.cases, report)
        self._confirmed_family(checks, self.budget.checks, None)
        for suite, (n_cases, n_checks) in sorted(per_suite.items()):
            self.suites[suite] = SuiteStats(
                method="confirmation",
                cases=n_cases,
                informative=sum(1 for k, *_ in cases if _suite_of(k) == suite),
                case_alpha=self.budget.cases,
                checks=n_checks,
                check_alpha=self.budget.checks,
            )
        self._promote_check_regressions()
        for key, evidence in sorted(self._verdicts.items()):
            if "\0" in key or evidence.confirmation is None:
                continue
            {
                "confirmed": report.confirmed,
                "not confirmed": report.not_confirmed,
                "not re-sampled": report.not_resampled,
            }[evidence.confirmation].append(key)
        self.confirmation = report

    def _confirmed_family(
        self,
        family: list[tuple[str, Counts, Counts, confirmstats.Outcome | None]],
        level: float,
        report: ConfirmationReport | None,
    ) -> None:
        """One Holm family over every tested stratum of the run (those not re-sampled hold
        p = 1); each verdict lands in `_verdicts`."""
        p_values = [confirmstats.p_value(o) if o is not None else 1.0 for *_, o in family]
        adjusted = confirmstats.holm_adjusted(p_values, family=len(family))
        for (key, before, after, outcome), p, q in zip(family, p_values, adjusted, strict=True):
            if not (rate_below(before, after) or rate_above(before, after)):
                continue  # unchanged: neither listed nor weighed further
            if rate_above(before, after):
                change: gatestats.Change = "improvement"
            else:
                change = "regression" if q <= level else "within_noise"
            confirmation = None
            if change != "improvement":
                confirmation = (
                    "not re-sampled"
                    if outcome is None
                    else "confirmed"
                    if change == "regression"
                    else "not confirmed"
                )
            again = (outcome.b, outcome.r) if outcome is not None else after
            text = _confirm_text(before, after, outcome, p, q, level, change)
            self._verdicts[key] = Evidence(
                baseline=before,
                run=again,
                p_value=p,
                adjusted_p_value=q,
                change=change,
                cause="case" if change == "regression" else None,
                text=text,
                confirmation=confirmation,
            )

    def _promote_check_regressions(self) -> None:
        """A check that regressed inside a case that dropped within noise names its case a
        regression too: both verdicts then point at the same case."""
        for key, evidence in list(self._verdicts.items()):
            case_key, sep, check = key.partition("\0")
            if not sep or evidence.change != "regression":
                continue
            case = self._verdicts.get(case_key)
            if case is not None and case.change == "within_noise":
                self._verdicts[case_key] = Evidence(
                    baseline=case.baseline,
                    run=case.run,
                    p_value=case.p_value,
                    adjusted_p_value=case.adjusted_p_value,
                    change="regression",
                    cause="check",
                    text=f"{case.text}; its check {check!r} regressed: {evidence.text}",
                    confirmation=case.confirmation,
                )

    # -- the GateRule interface --------------------------------------------------------------

    def judged_by(self, key: str) -> Judge:
        """The rule that decides this case: `statistical`, `exact` or `strict`."""
        return self._judge.get(key, self.name)

    def case_change(
        self, before: BaselineStatus, before_counts: Counts | None, case: CaseResult
    ) -> GateChange:
        if self.judged_by(case.key) != "statistical":
            return classify(before, case.status, before_counts, case.pass_counts())
        found = self._verdicts.get(case.key)
        if found is not None:
            return found.change
        if case.key in self._weighed:
            return "unchanged"
        # Not weighed: an unscored case, or a flaky baseline without counts (never gates).
        return classify(before, case.status, before_counts, case.pass_counts())

    def check_change(self, key: str, before: CheckStatus, check: CheckResult) -> GateChange:
        if self.judged_by(key) != "statistical":
            return check_transition(before, check.status)
        found = self._verdicts.get(_check_key(key, check.name))
        return "unchanged" if found is None else found.change

    def evidence(self, key: str, check: str | None = None) -> Evidence | None:
        return self._verdicts.get(key if check is None else _check_key(key, check))


def _case_counts(baseline: Baseline, key: str, expected: BaselineStatus | None) -> Counts | None:
    counts = baseline.pass_counts.get(key)
    if counts is not None:
        return counts.as_tuple()
    return ONE_SAMPLE.get(expected or "")


def _check_counts(baseline: Baseline, case: CaseResult) -> Iterator[tuple[str, Counts, Counts]]:
    """(name, baseline counts, run counts) of each check both sides can weigh: its counts,
    else its status as one sample (n/a and error: none)."""
    counted = baseline.check_counts.get(case.key, {})
    statuses = baseline.checks.get(case.key, {})
    now_counted = case.check_counts
    for check in case.checks:
        name = check.name
        was = counted.get(name)
        before = was.as_tuple() if was is not None else ONE_SAMPLE.get(statuses.get(name, ""))
        now = now_counted.get(name)
        after = now.as_tuple() if now is not None else ONE_SAMPLE.get(check.status)
        if before is not None and after is not None:
            yield name, before, after


def _outcome(
    before: Counts, first: Counts, again: Counts, first_like: bool
) -> confirmstats.Outcome | None:
    """The stratum's outcome for `confirmstats`; None when it has no confirmation sample."""
    if again[1] == 0 or before[1] == 0:
        return None
    m0, f = (first[1], first[0]) if first_like else (0, 0)
    return confirmstats.Outcome(before[1], before[0], m0, f, again[1], again[0])


def _confirm_text(
    before: Counts,
    first: Counts,
    outcome: confirmstats.Outcome | None,
    p: float,
    q: float,
    level: float,
    change: gatestats.Change,
) -> str:
    head = f"{before[0]}/{before[1]} -> {first[0]}/{first[1]}"
    if change == "improvement":
        return head
    if outcome is None:
        return f"{head}; not re-sampled: no confirmation sample could have made it significant"
    text = f"{head}, confirmation samples {outcome.b}/{outcome.r}, p = {_p(p)}"
    if change == "regression":
        return f"{text}; confirmed: adjusted p = {_p(q)} <= {_p(level)}"
    return f"{text}; not confirmed (adjusted p = {_p(q)} > {_p(level)})"


def _flat(before: Counts, after: Counts) -> tuple[int, int, int, int]:
    """Stratum's (baseline_n, baseline_passes, run_m, run_passes) from two (passed, runs)."""
    return before[1], before[0], after[1], after[0]
