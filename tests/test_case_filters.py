"""`--feature TAG` and `--meta KEY=VALUE` select cases by what they declare, on `run`,
`cases list` and `compare`; every tag and pair given must hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalctl.cases.select import CaseFilter, parse_meta
from evalctl.errors import BadInputError
from tests.cli_helpers import run_cli

SUITE = """\
[suite]
name = "f"
kind = "assert"

[[case]]
id = "a"
features = ["search"]
metadata = { owner = "ann" }
input = { prompt = "a?" }
assert = [{ type = "contains", value = "ok" }]

[[case]]
id = "b"
features = ["search", "slow"]
metadata = { owner = "bob", tier = "1" }
input = { prompt = "b?" }
assert = [{ type = "contains", value = "ok" }]

[[case]]
id = "c"
input = { prompt = "c?" }
assert = [{ type = "contains", value = "ok" }]
"""

SCRIPT = '[[default]]\ncontent = "ok"\n'


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.toml").write_text(SUITE)
    (tmp_path / "script.toml").write_text(SCRIPT)
    return tmp_path / "f.toml"


def test_a_filter_needs_every_tag_and_every_pair() -> None:
    both = CaseFilter(features=("search", "slow"), meta={"owner": "bob"})
    assert both.matches(["slow", "search", "x"], {"owner": "bob", "tier": "1"})
    assert not both.matches(["search"], {"owner": "bob"})
    assert not both.matches(["search", "slow"], {"owner": "ann"})
    assert not both.matches(["search", "slow"], {})
    assert not CaseFilter()
    assert CaseFilter().matches([], {})


def test_meta_flags_are_key_value() -> None:
    assert parse_meta(["owner=bob", "q = a=b"]) == {"owner": "bob", "q": "a=b"}
    for bad in ("owner", "=bob"):
        with pytest.raises(BadInputError) as caught:
            parse_meta([bad])
        assert caught.value.field == "--meta"


def listed(capsys: pytest.CaptureFixture[str], suite: Path, *flags: str) -> list[dict[str, Any]]:
    got = run_cli(capsys, "cases", "list", str(suite), "--json", *flags)
    assert got.code == 0, got.err
    return [case for s in json.loads(got.out)["suites"] for case in s["cases"]]


def test_cases_list_selects_by_feature_and_metadata(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def keys(*flags: str) -> list[str]:
        return [case["key"] for case in listed(capsys, suite, *flags)]

    assert keys() == ["f/a", "f/b", "f/c"]
    assert keys("--feature", "search") == ["f/a", "f/b"]
    assert keys("--feature", "search", "--feature", "slow") == ["f/b"]
    assert keys("--meta", "owner=ann") == ["f/a"]
    assert keys("--feature", "slow", "--meta", "owner=ann") == []
    (b,) = listed(capsys, suite, "--meta", "tier=1")
    assert b["metadata"] == {"owner": "bob", "tier": "1"}


def test_a_malformed_meta_flag_or_metadata_is_bad_input(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    got = run_cli(capsys, "cases", "list", str(suite), "--meta", "owner")
    assert got.code == 2
    assert "--meta" in got.err
    assert "Traceback" not in got.err
    # A number or boolean label reads as its text (a data file's __metadata column holds
    # numbers); a table is no label.
    suite.write_text(SUITE.replace('tier = "1"', "tier = { level = 1 }"))
    checked = run_cli(capsys, "cases", "validate", str(suite))
    assert checked.code == 2
    assert "metadata" in checked.err


def run(capsys: pytest.CaptureFixture[str], suite: Path, out: str, *flags: str) -> dict[str, Any]:
    got = run_cli(
        capsys,
        "run",
        "--provider",
        "scripted",
        "--script",
        "script.toml",
        "--cases",
        str(suite),
        "--out",
        out,
        "--json",
        *flags,
    )
    assert got.code == 0, got.err
    results: dict[str, Any] = json.loads(Path(out, "results.json").read_text())
    return results


def test_run_selects_and_records_the_filter_and_metadata(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = run(capsys, suite, "searched", "--feature", "search")
    assert [c["key"] for c in results["cases"]] == ["f/a", "f/b"]
    assert results["settings"]["feature_filter"] == ["search"]
    assert results["cases"][1]["metadata"] == {"owner": "bob", "tier": "1"}
    results = run(capsys, suite, "bob", "--meta", "owner=bob")
    assert [c["key"] for c in results["cases"]] == ["f/b"]
    assert results["settings"]["meta_filter"] == {"owner": "bob"}


def test_a_filtered_run_leaves_the_other_baseline_cases_not_selected(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, suite, "full")
    made = run_cli(capsys, "baseline", "--from", "full", "--json")
    assert made.code == 0, made.err
    run(capsys, suite, "slow", "--feature", "slow")
    compared = run_cli(capsys, "compare", "baselines/scripted.json", "slow", "--json")
    assert compared.code == 0, compared.out
    out = json.loads(compared.out)
    assert (out["orphaned"], out["out_of_scope"]) == ([], 2)


def test_compare_narrows_to_the_selected_cases(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run(capsys, suite, "one")
    run(capsys, suite, "two")
    made = run_cli(capsys, "baseline", "--from", "one", "--json")
    assert made.code == 0, made.err
    gated = run_cli(
        capsys, "compare", "baselines/scripted.json", "two", "--meta", "owner=ann", "--json"
    )
    assert gated.code == 0, gated.out
    out = json.loads(gated.out)
    assert (out["orphaned"], out["out_of_scope"]) == ([], 2)
    diffed = run_cli(capsys, "compare", "one", "two", "--feature", "search", "--json")
    assert diffed.code == 0, diffed.out
    assert [c["key"] for c in json.loads(diffed.out)["cases"]] == ["f/a", "f/b"]


def test_a_resumed_run_keeps_its_filter(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(capsys, suite, "searched", "--feature", "search")
    changed = run_cli(capsys, "run", "--resume", "searched", "--feature", "slow")
    assert changed.code == 2
    assert "--feature" in changed.err
    resumed = run_cli(capsys, "run", "--resume", "searched", "--json")
    assert resumed.code == 0, resumed.err
    results = json.loads(Path("searched", "results.json").read_text())
    assert [c["key"] for c in results["cases"]] == ["f/a", "f/b"]
