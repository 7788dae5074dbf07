"""The baseline file: `baselines/<provider>.json`, one expected status per case key and,
since schema version 2, the outcome of each of its checks.

It keeps the familiar shape (`provider`, `model`, `baselines`) plus a schema version and
provenance. Provenance fields are optional on input so a hand-written baseline in the
familiar shape still reads; `build_baseline` always fills them.

Versions: 1 holds case statuses only; 2 adds `checks` (case key -> check name -> pass, fail
or n/a), which lets `compare` gate a check that regressed inside a case that already failed;
3 adds what a sampled baseline (`--samples K`) measured: `pass_counts` for every case,
`check_counts` (per case, per check), `sampling` per suite, the `platform` the samples were
drawn on, and `metrics` per suite (one value per sample); `case_metrics` (per case, per
sample: output tokens, latency, cost) came later in version 3, so that metric gates compare
the cases both sides hold and a narrowed re-record keeps the other cases' figures. Versions 1
and 2 still read, upgraded when read (the table in evalctl.results.versions), with none of
these (a version 2 file may hold `pass_counts` from `--repeats`); `written_as` keeps the
version the file was written at. A version 3 file without `case_metrics` gates metrics on
its per-suite figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

from evalctl.results.document import (
    Document,
    check_schema_version,
    load_document,
    require_kind,
    validate_document,
)

# PassCount is the runner's record, re-exported here where baseline readers look for it.
from evalctl.results.models import CheckStatus, SampleSettings
from evalctl.results.models import PassCount as PassCount
from evalctl.results.platform import Platform
from evalctl.results.versions import BASELINE_VERSION, supported, upgrade

BASELINE_SCHEMA_VERSION: Final = BASELINE_VERSION
SUPPORTED_BASELINE_VERSIONS: tuple[int, ...] = supported("baseline")

# `error` and `skipped` are deliberately absent: neither says anything about quality, so
# neither may become an expectation.
BaselineStatus = Literal["pass", "fail", "flaky"]

# How a suite was sampled: the run's record of it, kept in the baseline as is.
BaselineSampling = SampleSettings


class SuiteMetrics(BaseModel):
    """A suite's cost and speed as the baseline measured them, one value per sample r (K
    values; one for an unsampled baseline). Sample r of a case is its r-th scored attempt;
    each value is over the suite's scored cases in that sample."""

    model_config = ConfigDict(extra="forbid")

    # The mean output tokens per scored case.
    output_tokens: list[float]
    latency_p50_ms: list[float]
    latency_p95_ms: list[float]
    # The sample's total estimated cost; None when the provider is not billed (or the model
    # has no price).
    cost_usd: list[float] | None = None


class CaseMetrics(BaseModel):
    """One case's cost and speed in each of the baseline's samples (sample r: its r-th scored
    attempt), so that metrics can be figured over any set of cases (evalctl.baselines.metrics)."""

    model_config = ConfigDict(extra="forbid")

    output_tokens: list[int]
    latency_ms: list[float]
    # Each sample's estimated cost; None when the provider is not billed.
    cost_usd: list[float] | None = None

    @model_validator(mode="after")
    def _one_value_per_sample(self) -> CaseMetrics:
        lengths = {len(self.output_tokens), len(self.latency_ms)}
        if self.cost_usd is not None:
            lengths.add(len(self.cost_usd))
        if len(lengths) != 1 or 0 in lengths:
            raise ValueError("output_tokens, latency_ms and cost_usd need one value per sample")
        return self


class Baseline(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[3] = BASELINE_SCHEMA_VERSION
    kind: Literal["baseline"] = "baseline"
    provider: str
    model: str
    model_sha256: str | None = None
    created_at: str | None = None
    evalctl_version: str | None = None
    source_run_id: str | None = None
    baselines: dict[str, BaselineStatus]
    # Optional, beside `baselines` so the familiar shape stays: per case key, the pass count
    # of a baseline recorded with --repeats or --samples (then every case has one). `compare`
    # needs it to tell a real drop in a case's pass rate from noise (docs/gating.md).
    pass_counts: dict[str, PassCount] = Field(default_factory=dict)
    # Per case key, per check, the same count over the samples (version 3; absent when the
    # baseline was not sampled). A check only ever n/a is left out.
    check_counts: dict[str, dict[str, PassCount]] = Field(default_factory=dict)
    # Per case key, each check's outcome when the baseline was recorded (version 2; of the
    # last sample when sampled). `n/a` (the check had nothing to test) is kept apart: it is
    # neither a pass nor a failure.
    checks: dict[str, dict[str, CheckStatus]] = Field(default_factory=dict)
    # Per suite, how its samples were drawn (version 3; absent when not sampled).
    sampling: dict[str, BaselineSampling] = Field(default_factory=dict)
    # What produced the replies (version 3; None when the run did not record it).
    platform: Platform | None = None
    # Per suite, tokens, latency and cost over the samples (version 3).
    metrics: dict[str, SuiteMetrics] = Field(default_factory=dict)
    # Per case key, the same figures for that case alone (version 3; absent in files written
    # before they were kept).
    case_metrics: dict[str, CaseMetrics] = Field(default_factory=dict)
    # The pass-rate bar the source run had to clear. Anything under the default 0.5 was a
    # deliberate `--min-pass-rate`, kept in the file so a lowered bar is never silent.
    min_pass_rate: float | None = None
    # The version the file was written at, before it was upgraded (evalctl.results.versions).
    _written_as: int = PrivateAttr(default=BASELINE_SCHEMA_VERSION)

    @model_validator(mode="wrap")
    @classmethod
    def _upgraded(cls, data: Any, handler: ModelWrapValidatorHandler[Baseline]) -> Baseline:
        # Every baseline is validated in the current shape: an older one is upgraded first.
        written_as = data.get("schema_version") if isinstance(data, dict) else None
        if isinstance(data, dict):
            data = upgrade("baseline", data)
        baseline = handler(data)
        if isinstance(written_as, int) and written_as in SUPPORTED_BASELINE_VERSIONS:
            baseline._written_as = written_as
        return baseline

    @property
    def written_as(self) -> int:
        """The schema version of the file this baseline was read from (the current one for a
        baseline built in memory): a version 1 file recorded no check outcomes."""
        return self._written_as

    @model_serializer(mode="wrap")
    def _omit_empty_counts(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A baseline recorded without --repeats keeps exactly the familiar shape.
        data: dict[str, Any] = handler(self)
        for field in (
            "pass_counts",
            "check_counts",
            "sampling",
            "metrics",
            "case_metrics",
            "platform",
        ):
            if not getattr(self, field):
                data.pop(field, None)
        return data

    @model_validator(mode="after")
    def _counts_have_statuses(self) -> Baseline:
        stray = sorted(set(self.pass_counts) - set(self.baselines))
        if stray:
            raise ValueError(f"pass_counts has keys that are not in baselines: {stray[:5]}")
        stray = sorted(set(self.checks) - set(self.baselines))
        if stray:
            raise ValueError(f"checks has keys that are not in baselines: {stray[:5]}")
        stray = sorted(set(self.check_counts) - set(self.baselines))
        if stray:
            raise ValueError(f"check_counts has keys that are not in baselines: {stray[:5]}")
        stray = sorted(set(self.case_metrics) - set(self.baselines))
        if stray:
            raise ValueError(f"case_metrics has keys that are not in baselines: {stray[:5]}")
        return self

    @field_validator("baselines")
    @classmethod
    def _keys_are_case_keys(cls, value: dict[str, BaselineStatus]) -> dict[str, BaselineStatus]:
        for key in value:
            suite, _, case_id = key.partition("/")
            if not suite or not case_id:
                raise ValueError(f"key {key!r} is not a case key of the form '<suite>/<id>'")
        return value


def read_baseline(path: Path) -> Baseline:
    """Read a baseline, with the same located errors as `read_run`: missing file, truncated
    JSON, run results given instead, unknown schema_version, wrong types, unknown keys."""
    return baseline_from_document(load_document(path))


def baseline_from_document(doc: Document) -> Baseline:
    """Validate an already loaded document as a baseline (see `read_baseline`)."""
    require_kind(doc, "baseline")
    check_schema_version(doc, SUPPORTED_BASELINE_VERSIONS)
    return validate_document(doc, Baseline, case_map="baselines")
