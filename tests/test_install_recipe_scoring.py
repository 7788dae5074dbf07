"""Scoring of the install-recipe kind, on transcripts made by running the real tools."""

from __future__ import annotations

from typing import Any

from evalctl.results.models import CheckResult, ToolCallRecord
from evalctl.scoring.check import Transcript
from evalctl.suites.release_assets.kind import CHECK_NAMES, KIND, OPTIONAL_CHECKS
from tests.release_helpers import recipe_case, run_calls, truth_recipe
from tests.scoring_helpers import score_kind


def score_calls(case_id: str, *calls: dict[str, Any]) -> dict[str, CheckResult]:
    case = recipe_case(case_id)
    transcript = run_calls(case, [("extract_pattern", args) for args in calls])
    return {c.name: c for c in score_kind(KIND, case, transcript)}


def recipe(case_id: str, **changes: Any) -> dict[str, Any]:
    args = truth_recipe(recipe_case(case_id))
    for key, value in changes.items():
        if value is None:
            args.pop(key, None)
        else:
            args[key] = value
    return args


def failing(results: dict[str, CheckResult]) -> set[str]:
    return {name for name, c in results.items() if not c.passed}


def test_true_recipe_passes_every_check_and_optional_checks_follow_the_truth() -> None:
    stern = score_calls("stern", recipe("stern"))
    # stern's truth sets none of the optional fields: only the six required checks run.
    assert list(stern) == [name for name in CHECK_NAMES if name not in OPTIONAL_CHECKS]
    assert len(stern) == 6 and "action" in stern
    assert not failing(stern)
    fly = score_calls("fly", recipe("fly"))
    assert {"install_subpath", "rename"} <= set(fly) and "strip_prefix" not in fly
    assert not failing(fly)
    assert not failing(score_calls("liberica", recipe("liberica")))


def test_mapping_check_compares_values_not_just_keys() -> None:
    """linux -> linux when the assets say Linux has the right keys and the wrong value."""
    case = recipe_case("k9s")
    submitted = recipe("k9s", os_mapping={"linux": "linux", "darwin": "Darwin"})
    # The dry run rejects it (a repair turn) ...
    rejected = run_calls(case, [("extract_pattern", submitted)])
    assert rejected.tool_calls[0].is_error
    # ... and were such a recipe ever recorded as accepted, the check would still fail it.
    accepted = Transcript(
        messages=[],
        responses=[],
        tool_calls=[
            ToolCallRecord(
                turn=1,
                name="extract_pattern",
                arguments=submitted,
                result="ok",
                data={"recipe": submitted},
                duration_ms=1.0,
            )
        ],
    )
    check = {c.name: c for c in score_kind(KIND, case, accepted)}["os_mapping"]
    assert not check.passed
    assert check.expected == {"linux": "Linux", "darwin": "Darwin"}
    assert check.actual == {"linux": "linux", "darwin": "Darwin"}
    assert check.message == "linux: expected 'Linux', got 'linux'"


def test_wrong_mapping_that_still_matches_assets_fails_mapping_and_assets() -> None:
    # x32 exists in the release (it is 386), so the dry run accepts it.
    x32 = {"amd64": "x32", "arm64": "arm64"}
    results = score_calls("gitleaks", recipe("gitleaks", arch_mapping=x32))
    assert failing(results) == {"assets", "arch_mapping"}
    assert results["arch_mapping"].message == "amd64: expected 'x64', got 'x32'"
    assert results["assets"].actual["linux/amd64"] == "gitleaks_8.21.2_linux_x32.tar.gz"
    assert results["assets"].actual["darwin/amd64"] is None  # no darwin x32 build
    assert results["assets"].actual["darwin/arm64"] == "gitleaks_8.21.2_darwin_arm64.tar.gz"


def test_no_submission_fails_every_check_with_actual_none() -> None:
    results = score_calls("stern")
    assert failing(results) == set(results)
    assert all(c.actual is None for c in results.values())
    assert results["executable"].expected == "stern"
    assert results["archive_format"].expected == "tar.gz"
    assert results["action"].message == "no recipe: extract_pattern was never called"


def test_only_rejected_submissions_say_so() -> None:
    results = score_calls("stern", recipe("stern", format="zip"), recipe("stern", verify="x"))
    assert failing(results) == set(results)
    assert results["action"].message == (
        "no accepted recipe: all 2 extract_pattern call(s) were rejected"
    )
    assert results["action"].actual == "github_archive"  # the last attempt, for the reader
    assert results["assets"].actual == dict.fromkeys(results["assets"].expected)
    # Garbage arguments are shown, not crashed on.
    garbage = score_calls("fly", {"os_mapping": "linux", "executable": 3, "install_subpath": 5})
    assert garbage["os_mapping"].actual is None
    assert garbage["executable"].actual == 3
    assert garbage["install_subpath"].actual == 5
    assert not garbage["install_subpath"].passed
    assert score_calls("age", {"strip_prefix": ["age"]})["strip_prefix"].actual == ["age"]


def test_the_last_accepted_recipe_is_scored() -> None:
    wrong_but_valid = recipe("gitleaks", arch_mapping={"amd64": "x32", "arm64": "arm64"})
    rejected = recipe("gitleaks", format="zip")
    results = score_calls("gitleaks", wrong_but_valid, recipe("gitleaks"), rejected)
    assert not failing(results)


def test_equivalent_spellings_pass() -> None:
    # {tag} for v{version}, ./ and missing slashes, and btop's other os spelling.
    assert not failing(
        score_calls("gotop", recipe("gotop", asset_pattern="gotop_{tag}_{os}_{arch}.tgz"))
    )
    assert not failing(score_calls("age", recipe("age", strip_prefix="./age")))
    btop = recipe(
        "btop",
        os_mapping={"linux": "linux"},
        asset_pattern="btop-{arch}-{os}-musl.tbz",
        install_subpath="./bin/btop",
    )
    assert not failing(score_calls("btop", btop))


def test_strip_prefix_is_compared_where_it_resolves() -> None:
    # Written literally for one platform, the prefix is wrong elsewhere; the dry run only
    # accepts it when the recipe covers that one platform.
    literal = recipe(
        "helix",
        strip_prefix="helix-25.01-x86_64-linux/",
        os_mapping={"linux": "linux"},
        arch_mapping={"amd64": "x86_64"},
    )
    results = score_calls("helix", literal)
    assert results["strip_prefix"].passed  # right for the platform it covers
    assert failing(results) == {"assets", "os_mapping", "arch_mapping"}
    # Without a prefix, pointing install_subpath through the directory works but is not
    # the layout asked for.
    through = recipe("age", strip_prefix=None, install_subpath="age/age")
    results = score_calls("age", through)
    assert failing(results) == {"strip_prefix"}
    assert results["strip_prefix"].expected == "age/"
    assert results["strip_prefix"].actual is None


def test_rename_and_executable_are_checked() -> None:
    # Executable left as shipped: valid install, wrong command name for the case.
    results = score_calls(
        "fly",
        recipe(
            "fly", executable="flyctl", rename=None, verify="flyctl version", install_subpath=None
        ),
    )
    assert failing(results) == {"executable", "install_subpath", "rename"}
    assert results["rename"].expected == "fly" and results["rename"].actual is None


def test_case_checks_limit_what_is_scored() -> None:
    case = recipe_case("stern").model_copy(update={"checks": ["executable"]})
    transcript = run_calls(case, [("extract_pattern", recipe("stern"))])
    assert [c.name for c in score_kind(KIND, case, transcript)] == ["executable"]


def test_prompt_gives_repo_tag_assets_and_how_to_submit() -> None:
    from tests.release_helpers import context

    case = recipe_case("liberica")
    prompt = KIND.build_prompt(None, case, context(case))  # type: ignore[arg-type]
    assert "Repository: bell-sw/Liberica" in prompt
    assert "Release tag: 21.0.5+11" in prompt
    assert "- bellsoft-jdk21.0.5+11-linux-amd64.tar.gz" in prompt
    assert "users run `java`" in prompt
    assert "extract_pattern" in prompt
    shape = KIND.request_shape(None, case)  # type: ignore[arg-type]
    assert shape.terminal_tool == "extract_pattern" and shape.tool_choice == "required"


def test_strip_prefix_accepts_every_allowed_spelling_of_the_platform() -> None:
    # The ground truth allows two spellings of linux; a recipe using the second one resolves
    # its templated prefix with it. The mapping checks accept that spelling, so the prefix
    # check must too (it used to resolve the expectation with the first spelling only).
    from evalctl.suites.release_assets.kind import RecipeExpected

    truth = RecipeExpected(
        action="github_archive",
        format="tar.gz",
        asset_pattern="tool-{version}-{os}-{arch}.tar.gz",
        os_mapping={"linux": ["linux-musl", "linux"]},
        arch_mapping={"amd64": "x86_64"},
        executable="tool",
        assets={"linux/amd64": "tool-1.0.0-linux-x86_64.tar.gz"},
        strip_prefix="tool-{version}-{os}-{arch}/",
    )
    recipe_args = {"strip_prefix": "tool-{version}-{os}-{arch}/"}
    second = {"linux/amd64": {"strip_prefix": "tool-1.0.0-linux-x86_64/"}}
    first = {"linux/amd64": {"strip_prefix": "tool-1.0.0-linux-musl-x86_64/"}}
    wrong = {"linux/amd64": {"strip_prefix": "tool-1.0.0-x86_64/"}}
    case = recipe_case("stern").model_copy(update={"expected": truth, "checks": ["strip_prefix"]})

    def strip_prefix(targets: dict[str, dict[str, str]]) -> CheckResult:
        accepted = ToolCallRecord(
            turn=1,
            name="extract_pattern",
            arguments=recipe_args,
            result="ok",
            data={"recipe": recipe_args, "targets": targets, "release": {"tag": "v1.0.0"}},
            duration_ms=1.0,
        )
        (result,) = score_kind(KIND, case, Transcript([], [], [accepted]))
        return result

    assert strip_prefix(second).passed
    assert strip_prefix(first).passed
    result = strip_prefix(wrong)
    assert not result.passed
    assert result.message == (
        "linux/amd64: expected 'tool-1.0.0-linux-musl-x86_64/' or 'tool-1.0.0-linux-x86_64/', "
        "got 'tool-1.0.0-x86_64/'"
    )
