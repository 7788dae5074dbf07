"""`--shard i/n` and `evalctl merge`: shards merged equal the unsharded run; mixed or
overlapping shards are refused."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from evalctl.baselines.gate import compare_baseline
from evalctl.errors import BadInputError
from evalctl.results.io import read_run
from evalctl.results.models import RunResult, Shard
from evalctl.runner.merge import merge_shards
from evalctl.runner.recorded import shard_shared
from evalctl.sharding import in_shard, parse_shard, shard_of
from tests import factories as f
from tests.cli_helpers import run_cli

CASES = 9
# seed_base: each run (each shard too) draws its own first sample seed.
VOLATILE = frozenset(
    {"run_id", "started_at", "finished_at", "latency_ms", "duration_ms", "seed_base"}
)


def normalized(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


@pytest.fixture
def suite(echo_suite: Path, tmp_path: Path) -> tuple[Path, Path]:
    """An echo suite of CASES cases (registered by echo_suite) and its script."""
    lines = ['[suite]\nname = "echo"\nkind = "echo"\nsystem_prompt = "Echo."\nversion = "3"\n']
    lines.append('tools = ["upper"]\nmax_turns = 2\n')
    script = []
    for i in range(CASES):
        lines.append(f'[[case]]\nid = "c{i}"\ninput = {{ prompt = "p{i}" }}\n')
        lines.append(f'expected = {{ answer = "w{i}" }}\n')
        answer = "wrong" if i in (2, 4) else f"w{i}"
        script.append(f'[[cases."echo/c{i}"]]\ncontent = "{answer}"\n')
    path = tmp_path / "many.toml"
    path.write_text("\n".join(lines))
    script_path = tmp_path / "script.toml"
    script_path.write_text("\n".join(script))
    return path, script_path


def run(
    capsys: pytest.CaptureFixture[str], suite: tuple[Path, Path], out: Path, *extra: str
) -> Path:
    cases, script = suite
    done = run_cli(
        capsys, "run", "--provider", "scripted", "--script", str(script), "--cases", str(cases),
        "--out", str(out), "--no-progress", *extra,
    )  # fmt: skip
    assert done.code == 0, done.err
    return out / "results.json"


def shards(
    capsys: pytest.CaptureFixture[str], suite: tuple[Path, Path], root: Path, n: int = 3
) -> list[Path]:
    return [run(capsys, suite, root / f"shard{i}", "--shard", f"{i}/{n}") for i in range(1, n + 1)]


def edit(path: Path, change: Any) -> Path:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return path


def test_three_shards_merge_into_the_unsharded_run(
    suite: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole = json.loads(run(capsys, suite, tmp_path / "whole").read_text())
    parts = shards(capsys, suite, tmp_path)
    sizes = [len(json.loads(p.read_text())["cases"]) for p in parts]
    assert sum(sizes) == CASES and all(sizes)  # every shard got work, none twice
    merged = run_cli(capsys, "merge", *map(str, parts), "--out", str(tmp_path / "m"), "--json")
    assert merged.code == 0, merged.err
    result = json.loads((tmp_path / "m" / "results.json").read_text())
    assert normalized(result) == normalized(whole)
    assert result["settings"]["shard"] is None
    assert [c["key"] for c in result["cases"]] == [f"echo/c{i}" for i in range(CASES)]
    assert json.loads(merged.out)["summary"]["failed"] == 2


def test_shard_split_is_stable_and_total() -> None:
    keys = [f"s/case-{i}" for i in range(200)]
    for n in (1, 2, 5):
        owners = [[i for i in range(1, n + 1) if in_shard(k, i, n)] for k in keys]
        assert all(len(o) == 1 for o in owners)
    assert [shard_of(k, 4) for k in keys] == [shard_of(k, 4) for k in keys]
    assert parse_shard(" 2 / 3 ") == (2, 3)
    for bad in ("0/3", "4/3", "a/b", "3"):
        with pytest.raises(BadInputError):
            parse_shard(bad)


def test_bad_shard_spec_is_a_usage_error(
    suite: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases, script = suite
    bad = run_cli(
        capsys, "run", "--provider", "scripted", "--script", str(script), "--cases", str(cases),
        "--shard", "4/3",
    )  # fmt: skip
    assert bad.code == 2
    assert "--shard" in bad.err


def test_one_shard_compared_alone_is_not_missing_the_others(
    suite: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    part = read_run(shards(capsys, suite, tmp_path)[0])
    keys = [f"echo/c{i}" for i in range(CASES)]
    cmp = compare_baseline(f.baseline(dict.fromkeys([*keys, "echo/deleted"], "pass")), part)
    # Cases of other shards are out of scope, not orphaned; a deleted case is orphaned only
    # in the shard that would have run it.
    expected_orphans = ["echo/deleted"] if in_shard("echo/deleted", 1, 3) else []
    assert cmp.orphaned == expected_orphans
    assert cmp.out_of_scope == sum(not in_shard(k, 1, 3) for k in [*keys, "echo/deleted"])


def refused(capsys: pytest.CaptureFixture[str], out: Path, *files: Path) -> str:
    result = run_cli(capsys, "merge", *map(str, files), "--out", str(out))
    assert result.code == 2, result.out
    assert not (out / "results.json").exists()
    return result.err


def test_overlapping_shards_are_refused(
    suite: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two, _ = shards(capsys, suite, tmp_path)
    err = refused(capsys, tmp_path / "m1", one, two, one)
    assert "are shard 1/3" in err
    # A file claiming to be shard 3 but holding shard 2's cases.
    fake = tmp_path / "fake.json"
    fake.write_text(two.read_text())
    edit(fake, lambda d: d["settings"]["shard"].update(index=3))
    err = refused(capsys, tmp_path / "m2", one, two, fake)
    assert "is in both" in err and str(two) in err and str(fake) in err


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("provider.model", lambda d: d["provider"].update(model="other-model")),
        ("provider.model_sha256", lambda d: d["provider"].update(model_sha256="ab" * 32)),
        ("settings.suite_versions", lambda d: d["settings"]["suite_versions"].update(echo="4")),
        ("settings.repeats", lambda d: d["settings"].update(repeats=5)),
        ("provider.name", lambda d: d["provider"].update(name="gemini")),
    ],
)
def test_shards_of_different_runs_are_refused(
    suite: tuple[Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    field: str,
    change: Any,
) -> None:
    one, two, three = shards(capsys, suite, tmp_path)
    edit(three, change)
    err = refused(capsys, tmp_path / "m", one, two, three)
    assert field in err
    assert str(three) in err and str(one) in err


def test_missing_interrupted_and_unsharded_inputs_are_refused(
    suite: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one, two, three = shards(capsys, suite, tmp_path)
    assert "missing shard 3/3" in refused(capsys, tmp_path / "m1", one, two)
    whole = run(capsys, suite, tmp_path / "whole")
    assert "not a shard" in refused(capsys, tmp_path / "m2", one, two, whole)
    edit(two, lambda d: d.update(interrupted=True))
    err = refused(capsys, tmp_path / "m3", one, two, three)
    assert "interrupted" in err and "--resume" in err


def _shard_of(index: int, keys: list[str]) -> RunResult:
    mine = [f.case(key, "pass") for key in keys if in_shard(key, index, 2)]
    made = f.run(mine)
    shard = Shard(index=index, count=2, selection=keys)
    return made.model_copy(update={"settings": made.settings.model_copy(update={"shard": shard})})


def _changed(run: RunResult, dotted: str, value: object) -> RunResult:
    """`run` with the field at `dotted` (under RunResult) set to `value`, unvalidated."""
    head, _, rest = dotted.partition(".")
    if not rest:
        return run.model_copy(update={head: value})
    return run.model_copy(update={head: _changed(getattr(run, head), rest, value)})


@pytest.mark.parametrize("field", shard_shared())
def test_every_shared_setting_must_match(field: str) -> None:
    # Every setting RECORDED keeps in the results, derived, not listed here: a field added
    # there is refused when the shards differ in it, with no change to the merge.
    keys = [f"s/case-{i}" for i in range(6)]
    one, two = _shard_of(1, keys), _shard_of(2, keys)
    assert merge_shards([(Path("1.json"), one), (Path("2.json"), two)]).cases
    with pytest.raises(BadInputError, match=re.escape(field)):
        merge_shards([(Path("1.json"), one), (Path("2.json"), _changed(two, field, object()))])


@pytest.mark.parametrize("field", ["settings.seed_base", "settings.cooldown_s"])
def test_a_shard_may_have_its_own(field: str) -> None:
    keys = [f"s/case-{i}" for i in range(6)]
    one, two = _shard_of(1, keys), _shard_of(2, keys)
    merged = merge_shards([(Path("1.json"), one), (Path("2.json"), _changed(two, field, 7))])
    assert [c.key for c in merged.cases] == keys
