"""The release-assets tools on the committed fixtures: lookups, and the recipe dry run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evalctl.chat import ToolCall
from evalctl.errors import BadInputError
from evalctl.suites.release_assets.fixture import load_release
from evalctl.suites.release_assets.tools import EXTRACT_PATTERN, FETCH_FILE, INSPECT_ARCHIVE
from evalctl.tools.base import ToolInputError, ToolSpy
from tests.release_helpers import FIXTURES, context, recipe_case, truth_recipe

DOWNLOAD = "https://github.com/stern/stern/releases/download/v1.31.0/"


def submit(case_id: str, **changes: Any) -> dict[str, Any]:
    """Run extract_pattern on the case's true recipe with `changes` (None deletes a field)."""
    case = recipe_case(case_id)
    args = truth_recipe(case)
    for key, value in changes.items():
        if value is None:
            args.pop(key, None)
        else:
            args[key] = value
    return EXTRACT_PATTERN.run(args, context(case)).data


def rejection(case_id: str, **changes: Any) -> str:
    with pytest.raises(ToolInputError) as info:
        submit(case_id, **changes)
    return str(info.value)


# --- fetch_file / inspect_archive ---------------------------------------------------------


def test_fetch_file_by_name_and_by_url() -> None:
    ctx = context(recipe_case("stern"))
    by_name = FETCH_FILE.run({"name": "checksums.txt"}, ctx)
    by_url = FETCH_FILE.run({"name": DOWNLOAD + "checksums.txt"}, ctx)
    assert by_name.content == by_url.content
    assert "  stern_1.31.0_linux_amd64.tar.gz\n" in by_name.content
    assert by_url.normalized_arguments == {"name": "checksums.txt"}


def test_fetch_file_reads_repository_docs() -> None:
    out = FETCH_FILE.run({"name": "README.md"}, context(recipe_case("fly")))
    assert "links `fly`" in out.content


def test_fetch_file_points_archives_to_inspect_archive_without_an_error() -> None:
    out = FETCH_FILE.run({"name": "stern_1.31.0_linux_amd64.tar.gz"}, context(recipe_case("stern")))
    assert "inspect_archive" in out.content


def test_fetch_file_rejects_unknown_names_with_suggestions_and_foreign_urls() -> None:
    ctx = context(recipe_case("stern"))
    with pytest.raises(ToolInputError, match=re.escape("Did you mean: checksums.txt")):
        FETCH_FILE.run({"name": "checksum.txt"}, ctx)
    with pytest.raises(ToolInputError, match=re.escape("releases/download/v1.31.0/<asset name>")):
        FETCH_FILE.run({"name": "https://example.com/checksums.txt"}, ctx)
    with pytest.raises(ToolInputError, match="name is required"):
        FETCH_FILE.run({}, ctx)


def test_inspect_archive_lists_members() -> None:
    out = INSPECT_ARCHIVE.run(
        {"name": "age-v1.2.1-linux-amd64.tar.gz"}, context(recipe_case("age"))
    )
    lines = out.content.splitlines()
    assert lines[0] == "age-v1.2.1-linux-amd64.tar.gz (tar.gz, 3 entries):"
    assert lines[1:] == ["age/LICENSE", "age/age", "age/age-keygen"]


def test_inspect_archive_rejects_non_archives_and_unknown_assets() -> None:
    ctx = context(recipe_case("k3d"))
    with pytest.raises(ToolInputError, match="not an archive"):
        INSPECT_ARCHIVE.run({"name": "k3d-linux-amd64"}, ctx)
    with pytest.raises(ToolInputError, match="has no file"):
        INSPECT_ARCHIVE.run({"name": "k3d-linux-amd64.tar.gz"}, ctx)


# --- extract_pattern: accepted recipes ----------------------------------------------------


def test_true_recipe_is_accepted_and_recorded_with_its_targets() -> None:
    data = submit("stern")
    assert data["recipe"]["os_mapping"] == {"linux": "linux", "darwin": "darwin"}
    assert data["release"] == {"repo": "stern/stern", "tag": "v1.31.0", "version": "1.31.0"}
    assert data["targets"]["linux/arm64"] == {
        "asset": "stern_1.31.0_linux_arm64.tar.gz",
        "installed_as": "stern",
        "member": "stern",
    }
    assert set(data["targets"]) == {"linux/amd64", "linux/arm64", "darwin/amd64", "darwin/arm64"}


def test_format_alias_and_strip_prefix_are_normalised() -> None:
    data = submit("gotop", format="tgz")
    assert data["recipe"]["format"] == "tar.gz"
    data = submit("age", strip_prefix="./age")
    assert data["recipe"]["strip_prefix"] == "age/"
    assert data["targets"]["darwin/arm64"]["member"] == "age/age"


def test_mappings_sent_as_json_text_are_read() -> None:
    data = submit("k9s", os_mapping='{"linux": "Linux", "darwin": "Darwin"}')
    assert data["recipe"]["os_mapping"] == {"linux": "Linux", "darwin": "Darwin"}
    assert "must be an object" in rejection("k9s", os_mapping="Linux")


def test_windows_members_may_carry_exe() -> None:
    data = submit("stern", os_mapping={"linux": "linux", "darwin": "darwin", "windows": "windows"})
    windows = data["targets"]["windows/amd64"]
    assert windows["member"] == "stern.exe"
    assert windows["installed_as"] == "stern"


def test_templated_strip_prefix_resolves_per_platform() -> None:
    targets = submit("helix")["targets"]
    assert targets["darwin/arm64"]["strip_prefix"] == "helix-25.01-aarch64-macos/"
    assert targets["darwin/arm64"]["member"] == "helix-25.01-aarch64-macos/hx"


# --- extract_pattern: rejected recipes (each is a repair turn for the model) --------------


def test_wrong_os_spelling_is_rejected_naming_the_entry() -> None:
    message = rejection("k9s", os_mapping={"linux": "linux", "darwin": "Darwin"})
    assert "os_mapping: linux -> 'linux' matches no asset" in message
    assert "darwin ->" not in message  # the right entry is not blamed


def test_pattern_matching_nothing_suggests_similar_assets() -> None:
    message = rejection("k9s", os_mapping={"linux": "linux", "darwin": "darwin"})
    assert "matches no asset of derailed/k9s v0.32.7" in message
    assert "k9s_linux_amd64.tar.gz" in message  # what the recipe produced
    assert "Similar assets: k9s_Linux_amd64.tar.gz" in message


def test_every_problem_is_listed_at_once() -> None:
    message = rejection(
        "stern",
        asset_pattern="https://x/stern_{ver}_{os}_{arch}.zip",
        os_mapping={"macOS": "darwin"},
        verify="--version",
        colour="blue",
    )
    for expected in (
        "unknown field(s) colour",
        "not a URL or path",
        "unknown placeholder {ver}",
        "'macOS' is not one of our names",
        "format is tar.gz but asset_pattern ends in zip",
        "verify must run the executable",
    ):
        assert expected in message


def test_action_and_format_must_agree() -> None:
    assert "use action github_archive" in rejection("k3d", asset_pattern="k3d-{os}-{arch}.tar.gz")
    assert "github_file for binaries" in rejection("stern", format="binary")
    assert "apply to archives" in rejection("k3d", strip_prefix="k3d/")
    assert "format must be one of" in rejection("stern", format="rar")


def test_placeholders_and_mappings_must_agree() -> None:
    assert "arch_mapping is empty" in rejection("stern", arch_mapping={})
    assert "has no {os}" in rejection("stern", asset_pattern="stern_{version}_linux_{arch}.tar.gz")


def test_missing_executable_in_the_archive_shows_the_listing() -> None:
    message = rejection("age", strip_prefix=None)
    assert "has no member 'age'" in message
    assert "age/age-keygen" in message
    assert "is not a directory" in rejection("age", strip_prefix="bin/")


def test_shipped_name_differing_from_executable_needs_rename() -> None:
    assert "set rename to 'fly'" in rejection("fly", rename=None)
    assert "installed as 'k3d-linux-amd64'" in rejection("k3d", rename=None)


def test_signatures_are_not_programs() -> None:
    message = rejection("cosign", asset_pattern="cosign-{os}-{arch}.sig")
    assert "is not a program" in message


def test_spy_records_rejections_as_errors_and_acceptances_with_data() -> None:
    case = recipe_case("gitleaks")
    spy = ToolSpy({"extract_pattern": EXTRACT_PATTERN}, context(case))
    bad = truth_recipe(case) | {"arch_mapping": {"amd64": "amd64"}}
    rejected = spy.execute(ToolCall(id="1", name="extract_pattern", arguments=bad), turn=1)
    accepted = spy.execute(
        ToolCall(id="2", name="extract_pattern", arguments=truth_recipe(case)), turn=2
    )
    assert rejected.is_error and rejected.content.startswith("error: recipe rejected")
    assert not accepted.is_error and accepted.content.startswith("Recipe recorded: gitleaks")
    assert spy.records[0].data == {}
    assert spy.records[1].data["recipe"]["arch_mapping"]["amd64"] == "x64"


# --- fixtures -----------------------------------------------------------------------------


def write_fixture(tmp_path: Path, data: dict[str, Any]) -> Path:
    (tmp_path / "releases").mkdir()
    (tmp_path / "releases" / "demo.json").write_text(json.dumps(data))
    return tmp_path


def test_fixture_errors_name_the_file_and_field(tmp_path: Path) -> None:
    with pytest.raises(BadInputError, match="release fixture not found"):
        load_release(tmp_path, "demo")
    bad = {"repo": "a/b", "tag": "v1", "assets": ["x.zip"], "archives": {"y.zip": []}}
    write_fixture(tmp_path, bad)
    with pytest.raises(BadInputError, match=r"demo.json.*not assets: \['y.zip'\]"):
        load_release(tmp_path, "demo")
    with pytest.raises(BadInputError, match="invalid release fixture name"):
        load_release(tmp_path, "../etc/passwd")


def test_fixture_unknown_keys_are_errors(tmp_path: Path) -> None:
    write_fixture(tmp_path, {"repo": "a/b", "tag": "v1", "assets": ["x"], "extra": 1})
    with pytest.raises(BadInputError, match="field 'extra'"):
        load_release(tmp_path, "demo")


def test_committed_fixtures_load() -> None:
    names = sorted(p.stem for p in (FIXTURES / "releases").glob("*.json"))
    assert len(names) == 18
    for name in names:
        release = load_release(FIXTURES, name)
        assert release.assets == sorted(release.assets, key=str.lower)
