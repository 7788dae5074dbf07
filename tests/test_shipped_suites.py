"""The shipped release-assets and asset-triage suites: they load, their ground truth agrees
with the committed fixtures, and the perfect scripts score 100% through the real runner."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest

from evalctl.cases.loader import load_suite
from evalctl.config import load_settings
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from evalctl.suites.asset_triage.kind import TriageExpected, TriageInput
from evalctl.suites.release_assets.fixture import load_release
from evalctl.suites.release_assets.kind import RecipeExpected, RecipeInput
from evalctl.suites.release_assets.recipe import archive_format_of, expand
from evalctl.suites.release_assets.tools import EXTRACT_PATTERN
from tests.release_helpers import (
    CASES,
    FIXTURES,
    RECIPE_SUITE,
    TRIAGE_SUITE,
    context,
    suite,
    truth_recipe,
)

REQUIRED_RECIPE_CASES = {
    "stern": "baseline",
    "tflint": "zip",
    "helix": "tar.xz",
    "ast-grep": "rust-triple",
    "k9s": "capitalized-os",
    "trivy": "custom-arch",
    "gitleaks": "x64",
    "gotop": "v-prefixed-version",
    "gobuster": "no-version-in-name",
    "age": "strip-prefix",
    "liberica": "multi-binary",
    "btop": "install-subpath",
    "fly": "rename",
    "k3d": "single-file",
    "cosign": "rename",
    "minikube": "identity-mapping",
    "kopia": "macos",
    "cargo-deny": "musl",
}
RECIPE_CASES = suite(RECIPE_SUITE).cases
TRIAGE_CASES = suite(TRIAGE_SUITE).cases


def test_suites_load_with_the_required_cases() -> None:
    recipes = {c.id: c for c in RECIPE_CASES}
    for case_id, feature in REQUIRED_RECIPE_CASES.items():
        assert feature in recipes[case_id].features, case_id
    assert len(TRIAGE_CASES) >= 30
    assert all(c.features for c in [*RECIPE_CASES, *TRIAGE_CASES])


@pytest.mark.parametrize("case", RECIPE_CASES, ids=lambda c: c.id)
def test_recipe_truth_matches_its_fixture(case: object) -> None:
    from evalctl.cases.schema import Case

    assert isinstance(case, Case)
    truth, given = case.expected, case.input
    assert isinstance(truth, RecipeExpected) and isinstance(given, RecipeInput)
    release = load_release(FIXTURES, given.release)
    # The pattern, with the (first spelling of the) mappings, names exactly the truth's assets.
    produced = {}
    for os_key in truth.os_mapping:
        for arch_key in truth.arch_mapping:
            name = expand(
                truth.asset_pattern,
                release.tag,
                truth.first(truth.os_mapping, os_key),
                truth.first(truth.arch_mapping, arch_key),
            )
            if name in release.assets:
                produced[f"{os_key}/{arch_key}"] = name
    assert produced == truth.assets
    # The format agrees with the asset names.
    for asset in truth.assets.values():
        assert (archive_format_of(asset) or "binary") == truth.format
    # The real dry run accepts the truth and resolves it to the same assets.
    data = EXTRACT_PATTERN.run(truth_recipe(case), context(case)).data
    assert {p: t["asset"] for p, t in data["targets"].items()} == truth.assets


@pytest.mark.parametrize("case", TRIAGE_CASES, ids=lambda c: c.id)
def test_triage_asset_is_in_its_fixture(case: object) -> None:
    from evalctl.cases.schema import Case

    assert isinstance(case, Case) and isinstance(case.input, TriageInput)
    assert case.input.asset in load_release(FIXTURES, case.input.release).assets


def test_triage_labels_agree_with_recipe_truth() -> None:
    """Where a triage asset is one a recipe installs, the labels must say the same thing."""
    installed: dict[str, tuple[str, str, str]] = {}
    for case in RECIPE_CASES:
        assert isinstance(case.expected, RecipeExpected)
        for platform, asset in case.expected.assets.items():
            os_key, arch_key = platform.split("/")
            installed[asset] = (os_key, arch_key, case.expected.format)
    overlap = 0
    for case in TRIAGE_CASES:
        assert isinstance(case.input, TriageInput) and isinstance(case.expected, TriageExpected)
        if case.input.asset in installed:
            overlap += 1
            label = case.expected
            assert (label.os, label.arch, label.format) == installed[case.input.asset], case.id
            assert label.kind == "artifact", case.id
    assert overlap >= 5


def test_triage_cover_every_kind_of_file() -> None:
    kinds = {c.expected.kind for c in TRIAGE_CASES if isinstance(c.expected, TriageExpected)}
    assert kinds == {
        "artifact",
        "package",
        "checksum",
        "signature",
        "sbom",
        "attestation",
        "source",
    }


@pytest.mark.parametrize("name", ["release-assets", "asset-triage"])
def test_perfect_scripts_cover_every_case(name: str) -> None:
    script = tomllib.loads((CASES / "scripts" / f"{name}.perfect.toml").read_text())
    ids = {c.id for c in suite(CASES / f"{name}.toml").cases}
    assert "default" not in script
    assert set(script["cases"]) == {f"{name}/{i}" for i in ids}


@pytest.mark.parametrize("name", ["release-assets", "asset-triage"])
def test_perfect_scripts_score_100_percent(name: str, tmp_path: Path) -> None:
    request = RunRequest(
        provider="scripted",
        script=CASES / "scripts" / f"{name}.perfect.toml",
        paths=[CASES / f"{name}.toml"],
        out_dir=tmp_path,
        show_progress=False,
    )
    result = execute_run(request, load_settings(cwd=tmp_path), os.environ).result
    failed = {c.key: [k.message for k in c.checks if not k.passed] for c in result.cases}
    assert {k: v for k, v in failed.items() if v} == {}
    assert result.summary.passed == result.summary.total == len(suite(CASES / f"{name}.toml").cases)
    assert result.summary.first_try_rate == 1.0


def test_a_wrong_mapping_fails_the_os_mapping_check_in_a_run(tmp_path: Path) -> None:
    """End to end: a model that keeps mapping linux -> linux for k9s (assets say Linux)."""
    wrong = {
        "action": "github_archive",
        "asset_pattern": "k9s_{os}_{arch}.tar.gz",
        "format": "tar.gz",
        "os_mapping": {"linux": "linux", "darwin": "darwin"},
        "arch_mapping": {"amd64": "amd64", "arm64": "arm64"},
        "executable": "k9s",
        "verify": "k9s version",
    }
    reply = {"tool_calls": [{"name": "extract_pattern", "arguments": wrong}]}
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"cases": {"release-assets/k9s": [reply]}}))
    request = RunRequest(
        provider="scripted",
        script=script,
        paths=[RECIPE_SUITE],
        case_glob="k9s",
        out_dir=tmp_path / "out",
        show_progress=False,
    )
    result = execute_run(request, load_settings(cwd=tmp_path), os.environ).result
    (case,) = result.cases
    assert case.status == "fail"
    # The first rejection was a repair chance; the same recipe sent again unchanged and
    # rejected again ends the case there, well inside the suite's bound.
    assert load_suite(CASES / "release-assets.toml").table.max_turns > 2
    assert case.turns == 2
    assert [t.repeated_failed_calls for t in case.transcript] == [False, True]
    assert all(call.is_error for call in case.tool_calls)
    check = next(c for c in case.checks if c.name == "os_mapping")
    assert check.expected == {"linux": "Linux", "darwin": "Darwin"}
    assert check.actual == {"linux": "linux", "darwin": "darwin"}  # the last attempt
    assert check.message == (
        "no accepted recipe: all 2 extract_pattern call(s) were rejected (last attempt: "
        "linux: expected 'Linux', got 'linux'; darwin: expected 'Darwin', got 'darwin')"
    )
    assert not any(c.passed for c in case.checks)  # nothing was installed
