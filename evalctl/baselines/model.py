"""The baseline file: `baselines/<provider>.json`, one expected status per case key and,
since schema version 2, the outcome of each of its checks.

It keeps the familiar shape (`provider`, `model`, `baselines`) plus a schema version and
provenance. Provenance fields are optional on input so a hand-written baseline in the
familiar shape still reads; `build_baseline` always fills them.

Versions: 1 holds case statuses only; 2 adds `checks` (case key -> check name -> pass, fail
or n/a), which lets `compare` gate a check that regressed inside a case that already failed.
A version 1 file still reads, with no check outcomes (compare then says so).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
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
from evalctl.results.models import CheckStatus

BASELINE_SCHEMA_VERSION: Final = 2
SUPPORTED_BASELINE_VERSIONS: tuple[int, ...] = (1, BASELINE_SCHEMA_VERSION)

# `error` and `skipped` are deliberately absent: neither says anything about quality, so
# neither may become an expectation.
BaselineStatus = Literal["pass", "fail", "flaky"]


class PassCount(BaseModel):
    """How often a case passed when the baseline was recorded with `--repeats`."""

    model_config = ConfigDict(extra="forbid")

    passed: int = Field(ge=0)
    runs: int = Field(ge=1)

    @model_validator(mode="after")
    def _passed_within_runs(self) -> PassCount:
        if self.passed > self.runs:
            raise ValueError(f"passed ({self.passed}) exceeds runs ({self.runs})")
        return self

    def as_tuple(self) -> tuple[int, int]:
        return self.passed, self.runs


class Baseline(BaseModel):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1, 2] = BASELINE_SCHEMA_VERSION
    kind: Literal["baseline"] = "baseline"
    provider: str
    model: str
    model_sha256: str | None = None
    created_at: str | None = None
    evalctl_version: str | None = None
    source_run_id: str | None = None
    baselines: dict[str, BaselineStatus]
    # Optional, beside `baselines` so the familiar shape stays: per case key, the pass count
    # of a baseline recorded with --repeats. `compare` needs it to tell a real drop in a
    # flaky case's pass rate from noise (docs/flaky.md).
    pass_counts: dict[str, PassCount] = Field(default_factory=dict)
    # Per case key, each check's outcome when the baseline was recorded (version 2). `n/a`
    # (the check had nothing to test) is kept apart: it is neither a pass nor a failure.
    checks: dict[str, dict[str, CheckStatus]] = Field(default_factory=dict)
    # The pass-rate bar the source run had to clear. Anything under the default 0.5 was a
    # deliberate `--min-pass-rate`, kept in the file so a lowered bar is never silent.
    min_pass_rate: float | None = None

    @model_serializer(mode="wrap")
    def _omit_empty_counts(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # A baseline recorded without --repeats keeps exactly the familiar shape.
        data: dict[str, Any] = handler(self)
        if not self.pass_counts:
            data.pop("pass_counts", None)
        return data

    @model_validator(mode="after")
    def _counts_have_statuses(self) -> Baseline:
        stray = sorted(set(self.pass_counts) - set(self.baselines))
        if stray:
            raise ValueError(f"pass_counts has keys that are not in baselines: {stray[:5]}")
        stray = sorted(set(self.checks) - set(self.baselines))
        if stray:
            raise ValueError(f"checks has keys that are not in baselines: {stray[:5]}")
        if self.schema_version == 1 and self.checks:
            raise ValueError("checks needs schema_version 2")
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
