"""The record of a baseline comparison: its entries, its categories and its verdict.

The categories are data (`CATEGORIES`): each names the `Comparison` field that holds its
entries, its title, its tone, whether and how it gates, and the shape of its entries. Every
renderer (the terminal, the step summary's Markdown, the HTML page) and the counts line
iterate over them, so a new category is one entry here, the rule in `baselines.gate` that
fills it, and a row renderer only if its entries have a new shape.

The verdict is derived from the categories: the most severe code among the non-empty gating
categories (a failed gate before an unscored case), with each one's reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, computed_field

from evalctl.baselines.model import BaselineStatus
from evalctl.errors import ExitCode, Tone
from evalctl.results.models import CaseStatus, CheckResult, CheckStatus
from evalctl.results.text import plural
from evalctl.stats import Counts, wilson_interval


class RateInterval(BaseModel):
    """A pass count and its Wilson 95% interval."""

    passed: int
    runs: int
    low: float
    high: float

    @classmethod
    def of(cls, counts: Counts) -> RateInterval:
        interval = wilson_interval(*counts)
        return cls(
            passed=counts[0],
            runs=counts[1],
            low=round(interval.low, 4),
            high=round(interval.high, 4),
        )

    def describe(self) -> str:
        return f"{self.passed}/{self.runs} (95% CI {self.low:.0%}-{self.high:.0%})"


class CheckDetail(BaseModel):
    """A check's outcome in the run, with what it expected, found, and why."""

    name: str
    status: CheckStatus
    expected: Any = None
    actual: Any = None
    reason: str = ""

    @classmethod
    def of(cls, check: CheckResult) -> CheckDetail:
        return cls(
            name=check.name,
            status=check.status,
            expected=check.expected,
            actual=check.actual,
            reason=check.message,
        )


class CaseChange(BaseModel):
    key: str
    baseline: BaselineStatus
    current: CaseStatus
    # Names of the checks that failed now: the first thing a reader wants after the key.
    failed_checks: list[str] = []
    # The same checks with expected, actual and the reason.
    failures: list[CheckDetail] = []
    # Both pass rates (a flaky baseline's, or any case the statistical gate weighed) and
    # why the change does or does not gate.
    baseline_rate: RateInterval | None = None
    current_rate: RateInterval | None = None
    reason: str | None = None
    # The statistical gate's evidence: Fisher's one-sided p-value for "the rate dropped",
    # the same adjusted across the suite (Holm), and what made a regression one: `case` (its
    # own test), `suite` (a suite-level test fired) or `strict`.
    p_value: float | None = None
    adjusted_p_value: float | None = None
    cause: str | None = None
    # With `run --baseline`: `confirmed` (its confirmation samples made the drop a
    # regression), `not confirmed` (they did not), `not re-sampled` (no sample could have).
    confirmation: str | None = None


class ConfirmationReport(BaseModel):
    """What the run's confirmation step (`run --baseline`) gave the gate."""

    samples: int
    baseline_samples: int
    # Drops re-sampled and confirmed, re-sampled and not confirmed, and not re-sampled.
    confirmed: list[str] = []
    not_confirmed: list[str] = []
    not_resampled: list[str] = []


class CheckChange(BaseModel):
    """One check whose outcome changed inside a case whose status did not."""

    key: str
    check: str
    baseline: CheckStatus
    current: CheckStatus
    case_status: CaseStatus
    expected: Any = None
    actual: Any = None
    reason: str = ""
    # As on CaseChange, from the statistical gate: both pass rates and the evidence.
    baseline_rate: RateInterval | None = None
    current_rate: RateInterval | None = None
    p_value: float | None = None
    adjusted_p_value: float | None = None
    evidence: str | None = None


class MetricChange(BaseModel):
    """One suite metric above what its `[suite.gate]` tolerates."""

    key: str  # the suite
    metric: str
    run: float
    baseline_mean: float
    baseline_sd: float
    tolerance: float
    # baseline_mean * (1 + tolerance) + the prediction margin (evalctl.baselines.metrics)
    limit: float
    # The false-alarm rate this metric was gated at (its share of the metric gates' alpha).
    alpha: float | None = None


class MetricReport(BaseModel):
    """One metric of one suite: the run's value beside the baseline's samples (always shown;
    `limit` is set only where the suite gates on it)."""

    metric: str
    run: float | None = None
    baseline_mean: float | None = None
    baseline_sd: float | None = None
    baseline_samples: int = 0
    tolerance: float | None = None
    limit: float | None = None
    # How many cases the figures are over: the cases both sides hold (0: not known).
    cases: int = 0
    # The false-alarm rate the metric is gated at, where it gates.
    alpha: float | None = None
    # Why the metric could not be compared or gated as usual (e.g. a baseline with only
    # whole-suite figures against a narrowed run); None when it was.
    note: str | None = None


class SuiteTestReport(BaseModel):
    """One suite-level test of the statistical gate, for --json."""

    name: str
    statistic: int
    expected: float
    p_value: float
    alpha: float
    fired: bool
    strata: int


class SuiteStats(BaseModel):
    """What the statistical gate weighed in one suite, for --json."""

    # How its drops were tested: `confirmation` (against the run's confirmation samples),
    # else `suite tests` (the run's own samples, per-case and suite-level tests).
    method: str = "suite tests"
    # Cases that entered the gate, and those whose samples disagree (they carry evidence).
    cases: int
    informative: int
    # The per-case family's share of alpha after the split (0: it could not fire).
    case_alpha: float
    tests: list[SuiteTestReport] = []
    # The same for the checks: how many were weighed, the per-check family's share, and the
    # suite's check test (each case's checks as one unit).
    checks: int = 0
    check_alpha: float = 0.0
    check_tests: list[SuiteTestReport] = []


class NewCase(BaseModel):
    key: str
    status: CaseStatus


class UnscoredCase(BaseModel):
    key: str
    status: CaseStatus
    reason: str
    in_baseline: bool


# What a category's entries are, so a renderer knows how to draw their rows: `case` a
# CaseChange, `check` a CheckChange, `key` a bare case key, `unscored` an UnscoredCase,
# `new` a NewCase, `metric` a MetricChange.
Shape = Literal["case", "check", "key", "unscored", "new", "metric"]


@dataclass(frozen=True)
class Category:
    """One section of a comparison."""

    # The `Comparison` field (and --json key) holding the entries.
    field: str
    title: str
    shape: Shape
    tone: Tone
    # What a non-empty category makes the exit code; OK: it is reported, never gates.
    gates: ExitCode = ExitCode.OK
    # Counted as `1 regression`/`2 regressions`; invariable nouns read `2 orphaned`.
    noun: str = ""
    invariable: bool = False
    # In the counts line (every renderer's one-line summary).
    counted: bool = True
    # Listed in its own section (else only counted).
    listed: bool = True
    # On the CI job page (`$GITHUB_STEP_SUMMARY`): what a reviewer acts on.
    in_step_summary: bool = True
    # The gate's reason for this category: `{count}` as in the counts line, `{cases}` the
    # count in cases; the first keys follow in parentheses.
    because: str = "{count}"
    hint: str | None = None

    def count(self, n: int) -> str:
        """`1 regression`, `2 regressions`, `2 orphaned`."""
        return plural(n, self.noun, many=self.noun if self.invariable else None)

    def nouns(self, n: int) -> str:
        """The noun as `count(n)` words it, without the number."""
        return self.count(n).split(" ", 1)[1]


# In the order sections are shown; the counts line keeps the same order.
CATEGORIES: tuple[Category, ...] = (
    Category("regressions", "Regressions", "case", "fail", ExitCode.GATE_FAILED, noun="regression"),
    Category(
        "check_regressions",
        "Check regressions (inside cases that fail either way)",
        "check",
        "fail",
        ExitCode.GATE_FAILED,
        noun="check regression",
    ),
    Category(
        "metric_regressions",
        "Metric regressions (above a suite's [suite.gate] tolerance)",
        "metric",
        "fail",
        ExitCode.GATE_FAILED,
        noun="metric regression",
    ),
    Category(
        "orphaned",
        "Orphaned (in the baseline, missing from the results)",
        "key",
        "fail",
        ExitCode.GATE_FAILED,
        noun="orphaned",
        invariable=True,
    ),
    Category(
        "unscored",
        "Unscored",
        "unscored",
        "error",
        ExitCode.INFRA,
        noun="unscored",
        invariable=True,
        because="{cases} could not be scored",
        hint="an infrastructure error or a missing prerequisite; see the reasons above",
    ),
    # A drop the statistical gate weighed and found no more than sampling noise: listed with
    # both rates and its p-value, never hidden, never gating.
    Category(
        "within_noise",
        "Changed, within noise (not gating)",
        "case",
        "flaky",
        noun="within noise",
        invariable=True,
    ),
    Category(
        "check_within_noise",
        "Check changes, within noise (not gating)",
        "check",
        "flaky",
        noun="check change within noise",
        counted=False,
    ),
    Category("improvements", "Improvements", "case", "pass", noun="improvement"),
    Category("check_improvements", "Check improvements", "check", "pass", noun="check improvement"),
    Category(
        "new",
        "New (not in the baseline)",
        "new",
        "flaky",
        noun="new",
        invariable=True,
        in_step_summary=False,
    ),
    # A check that went pass -> fail inside a case that passes on both sides: the suite's
    # threshold below 1 declared that verdict, so it is a note.
    Category(
        "passing_check_regressions",
        "Check regressions inside passing cases (not gating)",
        "check",
        "flaky",
        noun="check regression in passing cases",
        counted=False,
    ),
    Category(
        "flaky_changes",
        "Flaky in the baseline, no credible change (not gating)",
        "case",
        "skipped",
        noun="flaky case",
        counted=False,
        in_step_summary=False,
    ),
    Category(
        "unchanged",
        "Unchanged",
        "key",
        "skipped",
        noun="unchanged",
        invariable=True,
        listed=False,
        in_step_summary=False,
    ),
)

# Which code wins when several gate: a failed gate says more than an unscored case.
_SEVERITY = (ExitCode.GATE_FAILED, ExitCode.INFRA)
# Keys a reason names before it says "...".
_NAMED = 5


def label(entry: object) -> str:
    """How a reason or a list names one entry: its case key, and its check if it has one."""
    if isinstance(entry, str):
        return entry
    if isinstance(entry, CheckChange):
        return f"{entry.key}: {entry.check}"
    if isinstance(entry, MetricChange):
        return f"{entry.key}: {entry.metric}"
    key: str = getattr(entry, "key", str(entry))
    return key


class GateVerdict(BaseModel):
    """What the gate decided: the exit code, each reason, and the line that says it. A
    command hands it back to `evalctl.cli.app`, which alone turns it into the exit."""

    exit_code: ExitCode
    reasons: list[str] = []
    hint: str | None = None

    @property
    def word(self) -> str:
        """`OK`, `FAILED`, `UNSCORED`."""
        return self.exit_code.verdict

    @property
    def summary(self) -> str:
        if not self.reasons:
            return self.exit_code.meaning
        return f"{self.exit_code.meaning}: {'; '.join(self.reasons)}"


class Comparison(BaseModel):
    kind: Literal["baseline_comparison"] = "baseline_comparison"
    baseline_file: str | None = None
    results_file: str | None = None
    baseline_provider: str
    baseline_model: str
    run_id: str
    run_provider: str
    run_model: str
    # The rule that decided each case (`baselines.gate.RULES`), and its alpha (statistical).
    gate: str = "strict"
    alpha: float | None = None
    # What differs between the baseline's platform and the run's (`platform_diff`): one
    # `field: before -> after` each; empty when they match or either was not recorded.
    platform_changes: list[str] = []
    # Per suite: the statistical gate's tests and p-values (--json), and the metrics.
    suites: dict[str, SuiteStats] = {}
    # Per suite: the rule that judged its cases (`statistical`, `exact`, `strict`; a suite
    # with cases of both kinds lists both, e.g. `statistical + exact (3 cases)`).
    rules: dict[str, str] = {}
    # With a run made with `run --baseline`: which drops its confirmation samples confirmed.
    confirmation: ConfirmationReport | None = None
    metrics: dict[str, list[MetricReport]] = {}
    # One field per category (CATEGORIES describes each).
    regressions: list[CaseChange] = []
    improvements: list[CaseChange] = []
    check_regressions: list[CheckChange] = []
    check_improvements: list[CheckChange] = []
    passing_check_regressions: list[CheckChange] = []
    within_noise: list[CaseChange] = []
    check_within_noise: list[CheckChange] = []
    metric_regressions: list[MetricChange] = []
    flaky_changes: list[CaseChange] = []
    orphaned: list[str] = []
    new: list[NewCase] = []
    unscored: list[UnscoredCase] = []
    unchanged: list[str] = []
    # Baseline entries the run did not select (--suite/--case); neither orphaned nor checked.
    out_of_scope: int = 0
    warnings: list[str] = []
    # Rewrites the baseline from these results: accepts improvements, drops orphans.
    update_command: str

    def entries(self, category: Category) -> list[Any]:
        """The category's entries, of the type its `shape` names."""
        items: list[Any] = getattr(self, category.field)
        return items

    @property
    def platform_line(self) -> str | None:
        """`platform differs: cpu_features: AVX2 -> none; ...`, or None when it does not."""
        if not self.platform_changes:
            return None
        return "platform differs: " + "; ".join(self.platform_changes)

    def counts_line(self) -> str:
        """`1 regression · 2 check regressions · 0 orphaned · ...` for every renderer."""
        return " · ".join(c.count(len(self.entries(c))) for c in CATEGORIES if c.counted)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def verdict(self) -> GateVerdict:
        for code in _SEVERITY:
            gating = [c for c in CATEGORIES if c.gates == code and self.entries(c)]
            if gating:
                return GateVerdict(
                    exit_code=code,
                    reasons=[self._reason(c) for c in gating],
                    hint=next((c.hint for c in gating if c.hint), None),
                )
        return GateVerdict(exit_code=ExitCode.OK)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> ExitCode:
        """The verdict's code, kept at the top level of --json for the scripts that read it."""
        return self.verdict.exit_code

    def _reason(self, category: Category) -> str:
        entries = self.entries(category)
        n = len(entries)
        named = ", ".join(label(e) for e in entries[:_NAMED])
        more = " ..." if n > _NAMED else ""
        lead = category.because.format(count=category.count(n), cases=plural(n, "case"))
        return f"{lead} ({named}{more})"
