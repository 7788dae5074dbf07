"""The `install-recipe` kind: from a GitHub release's asset list, write an install recipe
and submit it through the `extract_pattern` tool.

The recipe scored is the last *accepted* extract_pattern call (the tool dry-runs it against
the release first). Checks compare it with the case's ground truth; `assets` and
`strip_prefix` compare what the recipe resolves to on each ground-truth platform, so a
literal `tool-1.2.3-linux/` prefix does not pass for a templated one that covers darwin too.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evalctl.cases.schema import Case, SuiteTable
from evalctl.errors import BadInputError
from evalctl.results.models import CheckResult, ToolCallRecord, pass_or_fail
from evalctl.scoring import checks
from evalctl.scoring.check import Check, NamedCheck, ScoringContext, named_checks
from evalctl.scoring.kinds import RequestShape, SuiteKind
from evalctl.suites.release_assets.fixture import load_release
from evalctl.suites.release_assets.recipe import (
    CANONICAL_ARCH,
    CANONICAL_OS,
    FORMATS,
    expand,
    normalize_prefix,
    normalize_subpath,
)
from evalctl.suites.release_assets.tools import release_of
from evalctl.tools.base import ToolContext

TERMINAL_TOOL = "extract_pattern"
# Optional fields: checked only on cases whose ground truth sets them.
OPTIONAL_CHECKS = ("strip_prefix", "install_subpath", "rename")
# The platforms every recipe is asked to cover (where the release ships them).
REQUIRED_OS = ("linux", "darwin")
REQUIRED_ARCH = ("amd64", "arm64")


class RecipeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Fixture name: fixtures/releases/<release>.json next to the suite file.
    release: str
    # What the user wants installed, in their words.
    tool: str
    # Case-specific guidance (which variant, what users type), shown in the prompt.
    instructions: str = ""


MappingTruth = dict[str, str | list[str]]


class RecipeExpected(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["github_archive", "github_file"]
    format: str
    asset_pattern: str
    # A list value means several spellings are equally right (the pattern differs to match);
    # the first is the one `asset_pattern` is written for.
    os_mapping: MappingTruth
    arch_mapping: MappingTruth
    executable: str
    # "os/arch" -> the asset a correct recipe installs there.
    assets: dict[str, str] = Field(min_length=1)
    strip_prefix: str | None = None
    install_subpath: str | None = None
    rename: str | None = None
    # A working verify command; not scored (many are right), replayed by the perfect script.
    verify: str | None = None

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value not in FORMATS:
            raise ValueError(f"must be one of {', '.join(FORMATS)}")
        return value

    @field_validator("os_mapping", "arch_mapping")
    @classmethod
    def _canonical_keys(cls, value: MappingTruth) -> MappingTruth:
        known = set(CANONICAL_OS) | set(CANONICAL_ARCH)
        unknown = sorted(set(value) - known)
        if unknown:
            raise ValueError(f"unknown canonical names {unknown}")
        return value

    def first(self, mapping: MappingTruth, key: str) -> str:
        value = mapping[key]
        return value if isinstance(value, str) else value[0]


def last_accepted_recipe(records: list[ToolCallRecord]) -> ToolCallRecord | None:
    for record in reversed(records):
        if record.name == TERMINAL_TOOL and not record.is_error:
            return record
    return None


def _truth(case: Case) -> RecipeExpected:
    truth = case.expected
    assert isinstance(truth, RecipeExpected)
    return truth


def _recipe_check(name: str) -> NamedCheck:
    """One field of the last accepted recipe against the case's ground truth; with no
    accepted recipe, a failure saying why (the last rejected attempt compared, to read)."""

    def judge(ctx: ScoringContext) -> CheckResult:
        truth, calls = _truth(ctx.case), ctx.transcript.tool_calls
        record = last_accepted_recipe(calls)
        if record is not None:
            recipe: dict[str, Any] = record.data.get("recipe") or record.normalized_arguments or {}
            targets: dict[str, dict[str, str]] = record.data.get("targets", {})
            return _check(name, truth, recipe, targets, _release_tag(record))
        submitted = [r for r in calls if r.name == TERMINAL_TOOL]
        if not submitted:
            why = f"no recipe: {TERMINAL_TOOL} was never called"
            return checks.failed(name, _expected_value(truth, name), why)
        # Every submission was rejected by the dry run: nothing was installed, so the check
        # fails, but the last attempt is shown as `actual` to make the failure readable.
        why = f"no accepted recipe: all {len(submitted)} {TERMINAL_TOOL} call(s) were rejected"
        result = _check(name, truth, _lenient(submitted[-1].arguments), {}, None)
        detail = f" (last attempt: {result.message})" if result.message else ""
        return result.model_copy(update={"status": "fail", "message": why + detail})

    # Optional fields are checked only on cases whose ground truth sets them.
    applies = (
        (lambda case: getattr(_truth(case), name) is not None) if name in OPTIONAL_CHECKS else None
    )
    return NamedCheck(name, judge, applies=applies)


CHECK_NAMES = (
    "action",
    "archive_format",
    "assets",
    "os_mapping",
    "arch_mapping",
    "executable",
    *OPTIONAL_CHECKS,
)


class InstallRecipeKind(SuiteKind):
    name = "install-recipe"
    input_model = RecipeInput
    expected_model = RecipeExpected
    checks: Mapping[str, Check[Any]] = named_checks(*(_recipe_check(n) for n in CHECK_NAMES))

    def case_problems(
        self, suite: SuiteTable, case: Case, suite_dir: Path
    ) -> list[tuple[str, str]]:
        """Loader hook: `validate` finds a missing or broken release fixture, not `run`."""
        assert isinstance(case.input, RecipeInput)
        try:
            load_release(suite_dir / "fixtures", case.input.release)
        except BadInputError as exc:
            return [("case.input.release", exc.message)]
        return []

    def build_prompt(self, suite: SuiteTable, case: Case, ctx: ToolContext) -> str:
        assert isinstance(case.input, RecipeInput)
        release = release_of(ctx)
        lines = [
            f"Write an install recipe for {case.input.tool}.",
            f"Repository: {release.repo}",
            f"Release tag: {release.tag}",
            f"Assets ({len(release.assets)}):",
            *(f"- {name}" for name in release.assets),
        ]
        if case.input.instructions:
            lines.append(case.input.instructions)
        lines.append(
            f"Cover {' and '.join(REQUIRED_OS)} on {' and '.join(REQUIRED_ARCH)} wherever the "
            f"release ships them. Submit the recipe by calling {TERMINAL_TOOL}; if it reports "
            "an error, fix the recipe and call it again."
        )
        return "\n".join(lines)

    def request_shape(self, suite: SuiteTable, case: Case) -> RequestShape:
        # "required": every turn is a tool call, so the task always ends in a submission
        # (or runs out of turns), never in a prose answer nobody scores.
        return RequestShape(tool_choice="required", terminal_tool=TERMINAL_TOOL)


def _expected_value(truth: RecipeExpected, name: str) -> Any:
    field = {"archive_format": "format"}.get(name, name)
    value = getattr(truth, field)
    return dict(value) if isinstance(value, dict) else value


def _lenient(arguments: dict[str, Any]) -> dict[str, Any]:
    """A rejected submission, shaped enough to be compared field by field."""
    out = dict(arguments)
    for key in ("os_mapping", "arch_mapping"):
        value = out.get(key)
        if isinstance(value, str):
            with contextlib.suppress(json.JSONDecodeError):
                value = json.loads(value)
        out[key] = (
            {str(k).lower(): v for k, v in value.items()} if isinstance(value, dict) else None
        )
    return out


def _text_only(normalize: Callable[[str | None], str | None]) -> Callable[[Any], Any]:
    """Normalise strings; leave anything else (a rejected attempt's garbage) as it is."""
    return lambda value: normalize(value) if isinstance(value, str) else value


def _release_tag(record: ToolCallRecord) -> str | None:
    """The tag the recipe was checked against, to expand ground-truth templates."""
    info = record.data.get("release")
    tag = info.get("tag") if isinstance(info, dict) else None
    return tag if isinstance(tag, str) else None


def _check(
    name: str,
    truth: RecipeExpected,
    recipe: dict[str, Any],
    targets: dict[str, dict[str, str]],
    tag: str | None,
) -> CheckResult:
    if name == "action":
        return checks.equals(name, truth.action, recipe.get("action"))
    if name == "archive_format":
        return checks.equals(name, truth.format, recipe.get("format"))
    if name == "assets":
        return _assets_check(truth, targets)
    if name in ("os_mapping", "arch_mapping"):
        return checks.mapping_entries(name, getattr(truth, name), recipe.get(name))
    if name == "executable":
        return checks.equals(name, truth.executable, recipe.get("executable"))
    if name == "strip_prefix":
        return _strip_prefix_check(truth, recipe, targets, tag)
    if name == "install_subpath":
        return checks.equals(
            name, truth.install_subpath, recipe.get(name), normalize=_text_only(normalize_subpath)
        )
    if name == "rename":
        return checks.equals(name, truth.rename, recipe.get(name))
    raise ValueError(f"unknown check {name!r}")  # the loader only lets known names through


def _assets_check(truth: RecipeExpected, targets: dict[str, dict[str, str]]) -> CheckResult:
    actual = {plat: targets.get(plat, {}).get("asset") for plat in truth.assets}
    wrong = [
        f"{plat}: expected {want!r}, got {actual[plat]!r}"
        for plat, want in truth.assets.items()
        if actual[plat] != want
    ]
    return CheckResult(
        name="assets",
        status=pass_or_fail(not wrong),
        expected=dict(truth.assets),
        actual=actual,
        message="; ".join(wrong),
    )


def _spellings(mapping: MappingTruth, key: str) -> list[str]:
    value = mapping[key]
    return [value] if isinstance(value, str) else list(value)


def _strip_prefix_check(
    truth: RecipeExpected,
    recipe: dict[str, Any],
    targets: dict[str, dict[str, str]],
    tag: str | None,
) -> CheckResult:
    expected, submitted = truth.strip_prefix, recipe.get("strip_prefix")
    result = checks.equals(
        "strip_prefix", expected, submitted, normalize=_text_only(normalize_prefix)
    )
    resolved = [plat for plat in truth.assets if plat in targets]
    if tag is None or expected is None or not resolved:
        # Nothing resolved to compare on: fall back to comparing the templates.
        return result
    wrong = []
    for plat in resolved:
        os_key, arch_key = plat.split("/")
        # Every allowed spelling of the platform resolves to an allowed prefix: a recipe that
        # maps darwin to the ground truth's second spelling must not fail here for not using
        # the first (the mapping checks accept either, so this one must too).
        allowed = {
            normalize_prefix(expand(expected, tag, os_value, arch_value))
            for os_value in _spellings(truth.os_mapping, os_key)
            for arch_value in _spellings(truth.arch_mapping, arch_key)
        }
        got = targets[plat].get("strip_prefix")
        if got not in allowed:
            want = " or ".join(repr(a) for a in sorted(a for a in allowed if a is not None))
            wrong.append(f"{plat}: expected {want}, got {got!r}")
    return CheckResult(
        name="strip_prefix",
        status=pass_or_fail(not wrong),
        expected=expected,
        actual=submitted,
        message="; ".join(wrong),
    )


KIND = InstallRecipeKind()
