"""Versioned result models. `schema_version` is bumped on any incompatible change; readers
refuse versions they do not know rather than guessing."""

from __future__ import annotations

import hashlib
from typing import Any, Final, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    computed_field,
    model_validator,
)

from evalctl.chat import CompletionResponse, Message, Sampling, StopReason, Usage
from evalctl.confirmstats import MAX_CONFIRM_SAMPLES
from evalctl.results.platform import Platform

# Re-exported: most readers of the records import them from here.
from evalctl.results.status import SCORED as SCORED
from evalctl.results.status import CaseStatus as CaseStatus
from evalctl.results.versions import RUN_VERSION, STABILITY_VERSION
from evalctl.userfiles import MAX_SAMPLES

# The versions are in the one table of evalctl.results.versions, where each older run file
# is upgraded to the current shape when it is read. Soak and crash-test results are at
# version 1. Run results: version 2 added check statuses (`n/a`), the case input and the
# transcript; version 3 what a run's replies depended on and what a gate weighs: the
# platform, the sampling sent (per suite, case and attempt), per-check pass counts over
# repeats and the suites' metric gates (an older evalctl refuses a version 3 file by its
# version, not by an unknown key).
SCHEMA_VERSION: Final = STABILITY_VERSION
RUN_SCHEMA_VERSION: Final = RUN_VERSION

# `n/a`: the check had nothing to test in this case (its reason is in `message`). It is
# neither a pass nor a failure and is counted apart everywhere. `error`: the check could not
# reach a verdict (a judge model that did not answer; why is in `message`); the case is then
# `error`, unscored, like a case whose provider failed.
CheckStatus = Literal["pass", "fail", "n/a", "error"]
CHECK_STATUSES: Final = get_args(CheckStatus)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CheckResult(_Strict):
    """One named check of one case. `status` is the outcome; `passed` is derived from it
    (true exactly when status is `pass`) and still written, for readers written before `n/a`
    existed. On input `passed` is taken where `status` is absent (a constructor given
    `passed`; a version 1 file's checks are upgraded when read, evalctl.results.versions) and
    must agree with `status` where both are given (a file read back)."""

    name: str
    status: CheckStatus = "fail"
    expected: Any = None
    actual: Any = None
    message: str = ""
    # Set when not 1: the check's share of the case score (an assertion's `weight`).
    weight: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _status_from_passed(cls, data: Any) -> Any:
        if isinstance(data, dict) and "passed" in data:
            data = dict(data)
            passed = data.pop("passed")
            if not isinstance(passed, bool):
                raise ValueError(f"passed must be true or false, not {passed!r}")
            if "status" not in data:
                data["status"] = pass_or_fail(passed)
            elif data["status"] in CHECK_STATUSES and (data["status"] == "pass") != passed:
                raise ValueError(f"passed={passed} contradicts status {data['status']!r}")
        return data

    @computed_field  # type: ignore[prop-decorator]
    @property
    def passed(self) -> bool:
        return self.status == "pass"

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    @property
    def not_applicable(self) -> bool:
        return self.status == "n/a"


def pass_or_fail(passed: bool) -> CheckStatus:
    """The status of a check that reached a verdict."""
    return "pass" if passed else "fail"


def not_applicable(name: str, reason: str, expected: Any = None) -> CheckResult:
    """A check with nothing to test in this case, and why."""
    return CheckResult(name=name, status="n/a", expected=expected, message=reason)


class PassCount(_Strict):
    """How often something passed over repeated runs: a case, or one check of a case, over
    its scored repeats (`--repeats`, `--samples`)."""

    passed: int = Field(ge=0)
    runs: int = Field(ge=1, le=MAX_SAMPLES)

    @model_validator(mode="after")
    def _passed_within_runs(self) -> PassCount:
        if self.passed > self.runs:
            raise ValueError(f"passed ({self.passed}) exceeds runs ({self.runs})")
        return self

    def as_tuple(self) -> tuple[int, int]:
        return self.passed, self.runs


class SampleSettings(_Strict):
    """How `--samples K` sampled one suite: K repeats of each case, repeat r sent with seed r.
    A greedy suite (temperature 0) is sampled at a low temperature instead, since K greedy
    repeats would all be one answer (evalctl.runner.sampling). `temperature`, `top_p` and
    `seeds` are what the provider sent: None (or no seeds) where its API takes none."""

    samples: int = Field(ge=1, le=MAX_SAMPLES)
    seeds: list[int] = Field(default_factory=list)
    temperature: float | None = None
    top_p: float | None = None
    # True when the suite was greedy and the documented perturbation was used.
    perturbed: bool = False
    # One line for people, e.g. "greedy suite sampled at temperature 0.3, top_p 1, seeds 0..4".
    perturbation: str = ""


class ToolCallRecord(_Strict):
    turn: int
    name: str
    arguments: dict[str, Any]
    normalized_arguments: dict[str, Any] | None = None
    result: str
    data: dict[str, Any] = Field(default_factory=dict)
    is_error: bool = False
    # How the arguments broke the tool's `parameters` schema (empty: they did not). The tool
    # was refused unless it reads its arguments leniently (evalctl.tools.base).
    invalid_arguments: list[str] = Field(default_factory=list)
    duration_ms: float


class TurnRecord(_Strict):
    """One request of a case's conversation and the raw reply it got.

    `sent` holds the messages this request added, as rendered and sent: on turn 1 the user
    prompt, later the tool results (and, on a last answer turn, the request for the answer).
    The rest of each request is the previous turns' `sent` and `reply`, and the system
    prompt, which is sent every turn but stored once per run (`RunResult.system_prompts`,
    under the case's `system_prompt` reference) to keep files small.
    """

    turn: int
    sent: list[Message] = Field(default_factory=list)
    tool_choice: str = "auto"
    tools_offered: bool = True
    # The runner's extra turn, tools disabled, because the budget would have ended on a tool
    # call (evalctl.runner.attempt).
    final_answer_turn: bool = False
    # This reply repeated, argument for argument, the previous turn's tool calls, which had
    # failed, and they failed again: the runner ended the conversation here.
    repeated_failed_calls: bool = False
    # This turn's request no longer fit the model's context window: the conversation ended
    # here, unanswered, and the case was scored on the turns before it.
    context_overflow: bool = False
    reply: CompletionResponse | None = None


class Attempt(_Strict):
    """One execution of a case (repeats and crash retries each make one)."""

    status: CaseStatus
    latency_ms: float
    turns: int = 0
    usage: Usage = Field(default_factory=Usage)
    # One per model turn: why that reply ended (end_turn, tool_use, max_tokens, timeout, or
    # repetition when the local engine cut a degenerate loop).
    stop_reasons: list[StopReason] = Field(default_factory=list)
    error: str | None = None
    server_crashed: bool = False
    # Set in a sampled run (`--samples`), where each repeat is sent its own seed and maybe
    # temperature: what this attempt was sent, as the provider sent it.
    sampling: Sampling | None = None
    # A confirmation sample (`run --baseline`): the case dropped below its baseline, and this
    # fresh sample re-measures it. It is not one of the run's own repeats: the case's status,
    # pass rate and `pass_counts()` leave it out; the gate tests the baseline against these.
    confirmation: bool = False


class CaseDaemon(_Strict):
    """The daemon that served one case of `evalctl run --restart-per-case`."""

    pid: int | None = None
    # Set only when the daemon was respawned during the case (it crashed).
    final_pid: int | None = None
    start_ms: float = 0.0  # spawn until ready, model load included
    duration_ms: float = 0.0  # the case itself, on the ready daemon
    # Every transport error met, including ones a retry then got past.
    transport_errors: list[str] = Field(default_factory=list)


# How a case was driven, as its result records it (`CaseResult.driven_by`): by the model
# conversation, or by tool calls its kind made itself with no model asked.
DrivenBy = Literal["model", "tools"]


class CaseResult(_Strict):
    key: str
    suite: str
    id: str
    status: CaseStatus
    features: list[str] = Field(default_factory=list)
    # The case's `metadata` labels, so `compare --meta` can select on them.
    metadata: dict[str, str] = Field(default_factory=dict)
    # The case's `input` table as the suite gave it.
    input: dict[str, Any] | None = None
    # The values its placeholders were filled from (a data-file row's columns), for reports.
    vars: dict[str, Any] = Field(default_factory=dict)
    # Every execution; a scored case has at least one (a file whose scored case has none is
    # given the one its status describes when read, evalctl.results.versions).
    attempts: list[Attempt] = Field(default_factory=list)
    pass_rate: float | None = None
    # Wilson 95% interval of pass_rate over the scored repeats (evalctl.stats); None when no
    # repeat was scored. With one repeat it is wide on purpose: one try proves little.
    pass_ci_low: float | None = None
    pass_ci_high: float | None = None
    checks: list[CheckResult] = Field(default_factory=list)
    latency_ms: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    turns: int = 0
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    output: str = ""
    # The conversation of the last attempt, turn by turn (see TurnRecord); `system_prompt`
    # is its key in `RunResult.system_prompts`.
    system_prompt: str | None = None
    transcript: list[TurnRecord] = Field(default_factory=list)
    # Passed with no tool error to repair (the model got it right the first time).
    first_try: bool = False
    error: str | None = None
    server_crashed: bool = False
    skip_reason: str | None = None
    tokens_per_s: float | None = None
    # With --restart-per-case: the fresh daemon this case ran on.
    daemon: CaseDaemon | None = None
    # The sampling this case's requests were sent (flag > case > suite > greedy), as the
    # provider sent it: None in a field it does not send. None in files written before
    # sampling could be set, when every request was greedy with seed 0. In a sampled run
    # (`--samples`) each attempt records its own; this is the last one's, whose transcript
    # and checks the case keeps.
    sampling: Sampling | None = None
    # With more than one scored repeat: per check name, over the scored repeats, how many
    # had it `pass` (`runs` counts those where it was `pass` or `fail`; n/a and error are
    # left out, and a check never pass or fail is absent).
    check_counts: dict[str, PassCount] = Field(default_factory=dict)
    # Its answers cannot vary between samples (the scripted provider, a case no model answers,
    # a deterministic provider or target): the gate compares it exactly, any pass -> fail.
    deterministic: bool = False
    # How the case was driven (its kind's `drive()`, evalctl.scoring.kinds): by the model
    # conversation, or by tool calls the kind made with no model asked (retrieval). A file
    # from before it was recorded is upgraded when read (evalctl.results.versions): a case
    # that called tools and took no model turn reads as "tools".
    driven_by: DrivenBy = "model"
    # Per check, over the confirmation samples (`Attempt.confirmation`), as `check_counts`.
    confirmation_check_counts: dict[str, PassCount] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _samples_in_range(self) -> CaseResult:
        # The documented ranges (docs/errors.md, "Ranges"): a hand-made file with more
        # samples than a run can take would cost the gate's arithmetic without bound.
        samples, confirmations = self.pass_counts()[1], self.confirmation_counts()[1]
        if samples > MAX_SAMPLES:
            raise ValueError(f"{samples} scored samples: at most {MAX_SAMPLES} a case")
        confirmed = [c.runs for c in self.confirmation_check_counts.values()]
        if max([confirmations, *confirmed]) > MAX_CONFIRM_SAMPLES:
            raise ValueError(
                f"{max([confirmations, *confirmed])} confirmation samples: at most "
                f"{MAX_CONFIRM_SAMPLES} a case"
            )
        return self

    def pass_counts(self) -> tuple[int, int]:
        """(passed, scored) over the run's own attempts. Crash retries end in `error`, so
        they do not count: what remains is one scored attempt per repeat. Confirmation
        samples are left out (`confirmation_counts`)."""
        scored = [
            a.status for a in self.attempts if a.status in ("pass", "fail") and not a.confirmation
        ]
        return scored.count("pass"), len(scored)

    def confirmation_counts(self) -> tuple[int, int]:
        """(passed, scored) over the confirmation samples; (0, 0) when it had none."""
        scored = [
            a.status for a in self.attempts if a.status in ("pass", "fail") and a.confirmation
        ]
        return scored.count("pass"), len(scored)

    @property
    def confirmed(self) -> bool:
        """Whether the run re-sampled this case to confirm a drop."""
        return any(a.confirmation for a in self.attempts)


class ProviderInfo(_Strict):
    name: str
    model: str
    model_sha256: str | None = None
    # How the provider ran, as it reports it: for local, llama.cpp threads (and whether a
    # setting or the default chose them), n_ctx and KV-cache prefix reuse.
    settings: dict[str, Any] = Field(default_factory=dict)


class Shard(_Strict):
    """This run is shard `index` of `count` (1-based) of a larger selection."""

    index: int = Field(ge=1)
    count: int = Field(ge=1)
    # Every case key of the whole selection, in run order: lets `merge` check that the shards
    # cover the selection exactly once and put the cases back in the unsharded order.
    selection: list[str] = Field(default_factory=list)


# The case rules a suite may ask for (`[suite] gate`); `exact` is chosen by evalctl itself
# for cases whose answers cannot vary.
GateRuleName = Literal["statistical", "strict"]


class SuiteGate(_Strict):
    """A suite's opt-in metric gates (`[suite.gate]`): each a relative tolerance above the
    baseline (0.25 = 25%), on top of the one-sided prediction bound (baselines.metrics).
    A metric left out is reported by `compare` but never gates."""

    tokens_out: float | None = Field(default=None, ge=0)
    latency_p50: float | None = Field(default=None, ge=0)
    latency_p95: float | None = Field(default=None, ge=0)
    cost: float | None = Field(default=None, ge=0)
    # The rule `compare` judges the suite's cases by (`[suite] gate = "strict"` says it
    # without the table); None: compare's own. Kept out of `RunSettings.gates`.
    rule: GateRuleName | None = None


class ConfirmSettings(_Strict):
    """How `run --baseline B` confirmed drops: each case (or check) whose pass rate fell
    below the baseline's, and that could still turn out significant, was sampled `samples`
    more times with fresh seeds at the baseline's sampling (evalctl.confirmstats)."""

    baseline: str
    samples: int = Field(ge=0, le=MAX_CONFIRM_SAMPLES)
    # `--confirm auto` chose `samples` (False: given as a number).
    auto: bool = True
    # The baseline's samples per case (K), and how many cases and check strata the gate tests
    # statistically (the family sizes `samples` and the selection were computed for).
    baseline_samples: int = Field(ge=1, le=MAX_SAMPLES)
    tested_cases: int = Field(ge=0)
    tested_checks: int = Field(ge=0)
    # The exit code's false-alarm budget and the shares of it for cases and for checks.
    alpha: float
    case_level: float
    check_level: float
    # Per suite: whether the run's own samples were drawn like the baseline's (same
    # temperature and top_p, fresh seeds), so the first samples enter the test.
    first_like_baseline: dict[str, bool] = Field(default_factory=dict)
    # Per suite, the seeds the confirmation samples were sent (from the baseline's K on).
    seeds: dict[str, list[int]] = Field(default_factory=dict)
    # The cases that were re-sampled, and those that dropped but could not become
    # significant however the samples came out (not re-sampled: they cost nothing).
    confirmed: list[str] = Field(default_factory=list)
    futile: list[str] = Field(default_factory=list)


class RunSettings(_Strict):
    # --temperature and --seed as given (None: not given, each suite's and case's own
    # apply); `run --resume` gives them again. Files written before sampling could be set
    # hold 0.0 and 0 here, which is what every request was sent then.
    temperature: float | None = None
    seed: int | None = None
    # Per suite: the sampling and max_tokens its requests were sent, as the provider sent
    # them (a case's own sampling, where it has one, is on the case). Empty in older files.
    sampling: dict[str, Sampling] = Field(default_factory=dict)
    max_tokens: dict[str, int] = Field(default_factory=dict)
    repeats: int = 1
    # `--samples K` (then `repeats` is K): per suite, how its repeats were sampled. Empty
    # when the run was not sampled.
    sampled: dict[str, SampleSettings] = Field(default_factory=dict)
    timeout_s: float
    suites: list[str] = Field(default_factory=list)
    # The suites the user narrowed the run to (--suite, or --cases naming files); empty when
    # the run covered every suite. `suites` lists what ran, which cannot tell a narrowed run
    # from a suite deleted since the baseline; compare and baseline need to tell them apart.
    suite_filter: list[str] = Field(default_factory=list)
    suite_versions: dict[str, str] = Field(default_factory=dict)
    case_glob: str | None = None
    # `--feature` tags and `--meta` pairs the run selected cases by (baselines.scope).
    feature_filter: list[str] = Field(default_factory=list)
    meta_filter: dict[str, str] = Field(default_factory=dict)
    # `--limit N`: each suite ran its first N selected cases (baselines.scope).
    limit: int | None = None
    shard: Shard | None = None
    # The full-benchmark procedure: a fresh daemon per case, `cooldown_s` apart.
    restart_per_case: bool = False
    cooldown_s: float = 0.0
    # Per suite, the metric gates its `[suite.gate]` asked for; a suite without one is absent.
    gates: dict[str, SuiteGate] = Field(default_factory=dict)
    # The run's first sample seed (`RunRequest.seed_base`); `run --resume` keeps it.
    seed_base: int = 0
    # `run --baseline B` (with `--confirm`, default auto): how drops were confirmed.
    confirm: ConfirmSettings | None = None
    # Per suite, the gate rule its `[suite] gate = "..."` asked for; absent: compare's own.
    gate_rules: dict[str, str] = Field(default_factory=dict)
    # A matrix cell's prompt variant, the template each case's prompt was wrapped in
    # (evalctl.runner.prompt_variant); None: the prompts went as the cases build them.
    prompt_template: str | None = None

    @property
    def samples_per_case(self) -> int:
        """K: how many samples of each case the run took (`sampled` is empty unless its
        repeats were samples)."""
        return samples_per_case(self.repeats, bool(self.sampled))


def samples_per_case(repeats: int, sampled: bool) -> int:
    """K, the samples of each case: the repeats where they are samples (`--samples K`, or
    repeats sent fresh seeds), else 1 (repeats of one configured request). The one rule for
    a request (evalctl.runner.api.RunRequest) and a recorded run (RunSettings)."""
    return repeats if sampled else 1


class Environment(_Strict):
    host: str
    platform: str
    cpu: str
    cpu_count: int
    ram_bytes: int
    python: str
    evalctl: str
    llama_cpp: str | None = None


class LatencyStats(_Strict):
    p50: float = 0.0
    p95: float = 0.0
    p99: float = 0.0
    mean: float = 0.0


class Summary(_Strict):
    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    flaky: int = 0
    # Check outcomes over the scored cases; n/a (nothing to test) is counted apart.
    checks_passed: int = 0
    checks_failed: int = 0
    checks_na: int = 0
    # Over scored cases (pass + fail + flaky); None when nothing was scored.
    pass_rate: float | None = None
    first_try_rate: float | None = None
    latency_ms: LatencyStats = Field(default_factory=LatencyStats)
    turns_mean: float = 0.0
    usage: Usage = Field(default_factory=Usage)
    tokens_per_s: float | None = None
    # From the price table in config; None for local and scripted providers.
    estimated_cost_usd: float | None = None


class RunResult(_Strict):
    schema_version: Literal[3] = RUN_SCHEMA_VERSION
    kind: Literal["run"] = "run"
    run_id: str
    started_at: str
    finished_at: str | None = None
    # True when the run stopped early (Ctrl-C); the cases present are complete.
    interrupted: bool = False
    evalctl_version: str
    provider: ProviderInfo
    settings: RunSettings
    environment: Environment
    cases: list[CaseResult] = Field(default_factory=list)
    # System prompts the transcripts refer to, by `prompt_ref` (each stored once).
    system_prompts: dict[str, str] = Field(default_factory=dict)
    summary: Summary = Field(default_factory=Summary)
    # What produced the replies (llama.cpp's build and CPU, or the API's fingerprint);
    # None in files written before it was recorded.
    platform: Platform | None = None


def prompt_ref(text: str) -> str:
    """The key a system prompt is stored under in `RunResult.system_prompts`."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
