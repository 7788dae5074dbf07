"""The one table of the versioned files evalctl writes, and the upgrade of an old file.

Each kind of file has a current version and, for each older version it ever wrote, a step
that turns a document of that version into one of the next, on the raw JSON. A file is
upgraded once, when it is read (`upgrade`, called by its reader before validation), so that
everything past the reader sees only the current shape: no gate, comparison, baseline writer
or report keeps a fallback for an older file. A version this evalctl does not know is
refused by `document.check_schema_version`, naming the file (exit 2).

- run results (`results.json`), version 3. From 1: a check's `passed` becomes its `status`.
  From 2: `settings.max_tokens`, null before it was recorded per suite, becomes the empty
  per-suite table.
- baselines, version 3. From 1 and from 2: nothing to add (what they lack reads empty); a
  key newer than the file's version is refused.
- soak and crash-test results, the matrix index (`matrix.json`): version 1, nothing older.
- a run directory's `manifest.json` (evalctl.runner.resume), version 2. From 1: the
  confirmation plan was not recorded; the file says so (`confirm_recorded: false`), and its
  resume takes `--baseline` and `--confirm` as given, as before. Its `header`, a run
  results document, is upgraded as one.

Some keys came within the current version of run results, without a bump: `fill_run` fills
them in every run file, after the steps (see there).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from evalctl.results.status import SCORED

Data = dict[str, Any]
Upgrade = Callable[[Data], Data]

# Final keeps each number's Literal type, which the models' `schema_version` fields require.
RUN_VERSION: Final = 3
BASELINE_VERSION: Final = 3
STABILITY_VERSION: Final = 1
MATRIX_VERSION: Final = 1
MANIFEST_VERSION: Final = 2


@dataclass(frozen=True)
class FileSchema:
    """One kind of file: its current version, the step from each older version to the next,
    and what is filled in every file after the steps (keys added without a bump)."""

    current: int
    steps: Mapping[int, Upgrade] = field(default_factory=dict)
    fill: Upgrade | None = None

    @property
    def supported(self) -> tuple[int, ...]:
        """Every version this evalctl reads, oldest first."""
        return (*sorted(self.steps), self.current)


# ---------------------------------------------------------------- run results


def _cases(data: Data) -> list[Any]:
    cases = data.get("cases")
    return cases if isinstance(cases, list) else []


def _run_1_to_2(data: Data) -> Data:
    """Version 2 gave each check a status (`n/a` among them); a version 1 check has only
    `passed`, which becomes `pass` or `fail`."""
    cases = []
    for case in _cases(data):
        checks = case.get("checks") if isinstance(case, dict) else None
        if isinstance(checks, list):
            case = {**case, "checks": [_check_status(c) for c in checks]}
        cases.append(case)
    if "cases" in data:
        data = {**data, "cases": cases}
    return {**data, "schema_version": 2}


def _check_status(check: Any) -> Any:
    if isinstance(check, dict) and "status" not in check and isinstance(check.get("passed"), bool):
        return {**check, "status": "pass" if check["passed"] else "fail"}
    return check


def _run_2_to_3(data: Data) -> Data:
    """Version 3 added the platform, the sampling sent, per-check pass counts and the suites'
    metric gates, all of which a version 2 file lacks and reads empty; `settings.max_tokens`,
    written as null before it was recorded per suite, becomes the empty table."""
    settings = data.get("settings")
    if isinstance(settings, dict) and "max_tokens" in settings and settings["max_tokens"] is None:
        data = {**data, "settings": {**settings, "max_tokens": {}}}
    return {**data, "schema_version": 3}


def fill_run(data: Data) -> Data:
    """What a run file of the current version may lack, filled in as the runner writes it now.

    - A scored case without attempts (a hand-written or generated file: the runner always
      kept them) gets the one attempt its own status, latency, turns and usage describe, so
      it counts as one sample everywhere.
    - A case without `driven_by` (written before it was recorded) that was scored on tool
      calls no model asked for (tools ran, yet no attempt took a turn: a retrieval case) reads
      as driven by its tools. Both are needed: a case that errored before its first turn took
      none either. A reader that dropped the conversations (`compare`) has no tool calls to
      see, and reads such a case as driven by the model, as it always did.
    """
    changed = False
    cases = []
    for case in _cases(data):
        if isinstance(case, dict):
            filled = _fill_case(case)
            changed = changed or filled is not case
            case = filled
        cases.append(case)
    return {**data, "cases": cases} if changed else data


def _fill_case(case: Data) -> Data:
    attempts = case.get("attempts")
    if "driven_by" not in case and _model_free(case, attempts):
        case = {**case, "driven_by": "tools"}
    if case.get("status") in SCORED and attempts in (None, []):
        one: Data = {"status": case["status"], "latency_ms": case.get("latency_ms", 0.0)}
        for name in ("turns", "usage"):
            if name in case:
                one[name] = case[name]
        case = {**case, "attempts": [one]}
    return case


def _model_free(case: Data, attempts: Any) -> bool:
    return (
        case.get("status") in ("pass", "fail")
        and bool(case.get("tool_calls"))
        and isinstance(attempts, list)
        and bool(attempts)
        and all(isinstance(a, dict) and a.get("turns", 0) == 0 for a in attempts)
    )


# ---------------------------------------------------------------- baselines

# The keys version 3 added (a sampled baseline's counts, sampling, platform and figures).
_BASELINE_3_KEYS = ("check_counts", "sampling", "platform", "metrics", "case_metrics")


def _given(value: Any) -> bool:
    return value is not None and value != {} and value != []


def _baseline_1_to_2(data: Data) -> Data:
    """Version 2 added each case's check outcomes (`checks`); a version 1 file has none."""
    if _given(data.get("checks")):
        raise ValueError("checks needs schema_version 2")
    return {**data, "schema_version": 2}


def _baseline_2_to_3(data: Data) -> Data:
    """Version 3 added what a sampled baseline measured; a version 2 file has none of it (its
    `pass_counts`, from `--repeats`, read as they are)."""
    newer = [name for name in _BASELINE_3_KEYS if _given(data.get(name))]
    if newer:
        raise ValueError(f"{', '.join(newer)} needs schema_version 3")
    return {**data, "schema_version": 3}


# ---------------------------------------------------------------- run manifests


def _manifest_1_to_2(data: Data) -> Data:
    """Version 2 records the confirmation plan (`confirm`) and the seeds it handed out; a
    version 1 manifest recorded neither, which `confirm_recorded: false` says."""
    newer = [name for name in ("confirm", "confirm_seeds_drawn") if _given(data.get(name))]
    if newer:
        raise ValueError(f"{', '.join(newer)} needs schema_version 2")
    return {**data, "schema_version": 2, "confirm_recorded": False}


def fill_manifest(data: Data) -> Data:
    """The manifest's `header` is a run results document without cases: upgraded as one."""
    header = data.get("header")
    if not isinstance(header, dict):
        return data
    upgraded = upgrade("run", header)
    return data if upgraded is header else {**data, "header": upgraded}


# ---------------------------------------------------------------- the table

VERSIONS: Final[Mapping[str, FileSchema]] = MappingProxyType(
    {
        "run": FileSchema(RUN_VERSION, {1: _run_1_to_2, 2: _run_2_to_3}, fill=fill_run),
        "baseline": FileSchema(BASELINE_VERSION, {1: _baseline_1_to_2, 2: _baseline_2_to_3}),
        "soak": FileSchema(STABILITY_VERSION),
        "crash-test": FileSchema(STABILITY_VERSION),
        "matrix": FileSchema(MATRIX_VERSION),
        "manifest": FileSchema(MANIFEST_VERSION, {1: _manifest_1_to_2}, fill=fill_manifest),
    }
)


def supported(kind: str) -> tuple[int, ...]:
    """The versions of `kind` this evalctl reads."""
    return VERSIONS[kind].supported


def upgrade(kind: str, data: Data) -> Data:
    """`data`, a document of `kind`, in the current shape: each step from its version on,
    then the fill. A version that is not an older one this table knows is left as it is, for
    the reader's version check and validation to refuse. Nothing given is changed in place.
    A step raises ValueError for a document that claims an older version yet holds what only
    a newer one has."""
    schema = VERSIONS[kind]
    version = data.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version in schema.steps:
        while version != schema.current:
            data = schema.steps[version](data)
            version += 1
    if schema.fill is not None and data.get("schema_version") == schema.current:
        data = schema.fill(data)
    return data
