"""The `asset-triage` kind: one release asset file name in, one JSON object out:
`{os, arch, format, kind}`, scored field by field.

It is the canary-sized half of the release-assets work: writing a whole recipe is beyond
small local models, but labelling one file name is within reach of the embedded one, so a
local baseline still carries signal and a prompt regression still shows.

Values are canonical (os: linux/darwin/...; arch: amd64/arm64/...). For a file that belongs
to a build (a signature, a checksum, an SBOM of one archive), os/arch/format describe that
build and `kind` says what the file is; `none` is for what the name does not say.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from evalctl.cases.schema import Case, SuiteTable
from evalctl.errors import BadInputError
from evalctl.results.models import CheckResult
from evalctl.scoring.check import Check, NamedCheck, ScoringContext, named_checks
from evalctl.scoring.checks import json_fields, json_object
from evalctl.scoring.kinds import RequestShape, SuiteKind
from evalctl.suites.release_assets.fixture import load_release
from evalctl.suites.release_assets.tools import release_of
from evalctl.tools.base import ToolContext

OS_VALUES = ("linux", "darwin", "windows", "freebsd", "none")
ARCH_VALUES = ("amd64", "arm64", "386", "arm", "ppc64le", "s390x", "riscv64", "none")
FORMAT_VALUES = (
    "tar.gz",
    "tar.xz",
    "tar.bz2",
    "zip",
    "binary",
    "deb",
    "rpm",
    "apk",
    "msi",
    "dmg",
    "none",
)
KIND_VALUES = ("artifact", "package", "checksum", "signature", "sbom", "attestation", "source")
FIELDS = ("os", "arch", "format", "kind")

OsValue = Literal["linux", "darwin", "windows", "freebsd", "none"]
ArchValue = Literal["amd64", "arm64", "386", "arm", "ppc64le", "s390x", "riscv64", "none"]
FormatValue = Literal[
    "tar.gz", "tar.xz", "tar.bz2", "zip", "binary", "deb", "rpm", "apk", "msi", "dmg", "none"
]
KindValue = Literal["artifact", "package", "checksum", "signature", "sbom", "attestation", "source"]

# Providers that support it constrain decoding to this schema; others are asked for JSON.
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "os": {"type": "string", "enum": list(OS_VALUES)},
        "arch": {"type": "string", "enum": list(ARCH_VALUES)},
        "format": {"type": "string", "enum": list(FORMAT_VALUES)},
        "kind": {"type": "string", "enum": list(KIND_VALUES)},
    },
    "required": list(FIELDS),
    "additionalProperties": False,
}


class TriageInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Fixture the asset comes from; the prompt shows only the asset name.
    release: str
    asset: str


class TriageExpected(BaseModel):
    model_config = ConfigDict(extra="forbid")

    os: OsValue
    arch: ArchValue
    format: FormatValue
    kind: KindValue


def _normalize(value: Any) -> Any:
    # Unconstrained providers sometimes answer "Linux" or " zip": case and spacing are not
    # what this suite measures; the spelling of the value (amd64, not x86_64) is.
    return value.strip().lower() if isinstance(value, str) else value


def _field_check(field: str) -> NamedCheck:
    """One field of the JSON answer against the case's ground truth."""

    def judge(ctx: ScoringContext) -> CheckResult:
        truth = ctx.case.expected
        assert isinstance(truth, TriageExpected)
        answer, error = json_object(ctx.answer)
        (result,) = json_fields(
            truth.model_dump(), answer, [field], error=error, normalize=_normalize
        )
        return result

    return NamedCheck(field, judge)


class AssetTriageKind(SuiteKind):
    name = "asset-triage"
    input_model = TriageInput
    expected_model = TriageExpected
    checks: Mapping[str, Check[Any]] = named_checks(*(_field_check(f) for f in FIELDS))

    def build_prompt(self, suite: SuiteTable, case: Case, ctx: ToolContext) -> str:
        assert isinstance(case.input, TriageInput)
        # Fail loudly on a case whose asset is not in its fixture: ground truth drawn from a
        # release must stay in step with it.
        release = release_of(ctx)
        if case.input.asset not in release.assets:
            raise BadInputError(
                f"asset {case.input.asset!r} is not in release fixture {case.input.release!r}",
                case_id=case.id,
                field="input.asset",
            )
        return f"File: {case.input.asset}"

    def request_shape(self, suite: SuiteTable, case: Case) -> RequestShape:
        return RequestShape(json_schema=ANSWER_SCHEMA, tool_choice="none")

    def case_problems(
        self, suite: SuiteTable, case: Case, suite_dir: Path
    ) -> list[tuple[str, str]]:
        """Loader hook: `validate` finds a missing release fixture or asset, not `run`."""
        assert isinstance(case.input, TriageInput)
        try:
            release = load_release(suite_dir / "fixtures", case.input.release)
        except BadInputError as exc:
            return [("case.input.release", exc.message)]
        if case.input.asset not in release.assets:
            return [("case.input.asset", f"not in release fixture {case.input.release!r}")]
        return []


KIND = AssetTriageKind()
