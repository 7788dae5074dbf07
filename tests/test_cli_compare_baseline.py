"""`evalctl baseline` and `evalctl compare` through the real entry point.

Most tests run `python -m evalctl.cli` in a subprocess: exit codes and the absence of a
traceback are only trustworthy at the process boundary. The end-to-end test that needs
the test-only echo suite registered runs in-process through the same `main()`.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evalctl.baselines.write import build_baseline, write_baseline
from evalctl.results.io import write_run
from evalctl.results.models import CaseResult
from tests import factories as f
from tests.cli_helpers import evalctl, run_cli

KEYS = ("ra/stern", "ra/tflint", "ra/helix", "ra/k9s")


def _cases(**changes: Any) -> list[CaseResult]:
    out = []
    for key in KEYS:
        name = key.split("/")[1]
        status = changes.get(name, "fail" if name == "tflint" else "pass")
        out.append(f.case(key, status, failed_checks=("os_mapping",) if status == "fail" else ()))
    return out


def _results(tmp_path: Path, name: str, cases: list[CaseResult]) -> Path:
    return write_run(f.run(cases, run_id=name), tmp_path / name)


def _baseline(tmp_path: Path) -> Path:
    """The baseline of a run with the default statuses, written by the library (the CLI
    path is covered by the `baseline --from` tests below; this saves a process per test)."""
    run = f.run(_cases(), run_id="base-run")
    write_run(run, tmp_path / "base-run")
    return write_baseline(build_baseline(run), tmp_path / "baselines" / "scripted.json")


def _clean(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr
    assert "Traceback" not in proc.stdout


# ------------------------------------------------------------------ compare: the gate


def test_regression_exits_1_and_names_the_case(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    results = _results(tmp_path, "now", _cases(stern="fail"))
    proc = evalctl(tmp_path, "compare", "--gate", "strict", str(baseline), str(results))
    _clean(proc)
    assert proc.returncode == 1
    assert "Regressions" in proc.stdout
    assert "ra/stern" in proc.stdout
    assert "os_mapping" in proc.stdout
    assert "quality gate failed: 1 regression (ra/stern)" in proc.stderr


def test_identical_results_exit_0(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    proc = evalctl(tmp_path, "compare", str(baseline), str(tmp_path / "base-run"))
    _clean(proc)
    assert proc.returncode == 0, proc.stderr
    assert "OK" in proc.stdout
    assert proc.stderr == ""


def test_improvement_exits_0_and_prints_the_update_command(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    results = _results(tmp_path, "now", _cases(tflint="pass"))
    proc = evalctl(tmp_path, "compare", str(baseline), str(results))
    assert proc.returncode == 0, proc.stderr
    assert "ra/tflint" in proc.stdout
    command = f"evalctl baseline --from {results} --out {baseline}"
    assert command in proc.stdout.replace("\n  ", " ")


def test_orphaned_exits_1(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    results = _results(tmp_path, "now", [c for c in _cases() if c.key != "ra/k9s"])
    proc = evalctl(tmp_path, "compare", str(baseline), str(results))
    assert proc.returncode == 1
    assert "ra/k9s" in proc.stdout and "1 orphaned (ra/k9s)" in proc.stderr


def test_unscored_exits_3_and_regression_wins_over_it(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    errored = _results(tmp_path, "err", _cases(helix="error"))
    proc = evalctl(tmp_path, "compare", str(baseline), str(errored))
    _clean(proc)
    assert proc.returncode == 3
    assert "ra/helix" in proc.stdout and "could not be scored (ra/helix)" in proc.stderr
    both = _results(tmp_path, "both", _cases(helix="error", stern="fail"))
    assert (
        evalctl(tmp_path, "compare", "--gate", "strict", str(baseline), str(both)).returncode == 1
    )


def test_json_output(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    results = _results(tmp_path, "now", [*_cases(stern="fail"), f.case("ra/new")])
    proc = evalctl(tmp_path, "compare", "--gate", "strict", str(baseline), str(results), "--json")
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["kind"] == "baseline_comparison"
    assert data["exit_code"] == 1
    assert [r["key"] for r in data["regressions"]] == ["ra/stern"]
    assert [n["key"] for n in data["new"]] == ["ra/new"]


def test_two_runs_give_a_diff_exit_0(tmp_path: Path) -> None:
    a = _results(tmp_path, "a", _cases())
    b = _results(tmp_path, "b", _cases(stern="fail"))
    proc = evalctl(tmp_path, "compare", str(a), str(b))
    _clean(proc)
    assert proc.returncode == 0, proc.stderr
    assert "ra/stern" in proc.stdout and "1 regressed" in proc.stdout
    data = json.loads(evalctl(tmp_path, "compare", str(a), str(b), "--json").stdout)
    assert data["kind"] == "run_diff"
    changes = {c["key"]: c["change"] for c in data["cases"]}
    assert changes["ra/stern"] == "regression" and changes["ra/helix"] == "unchanged"


# ------------------------------------------------------------------ malformed inputs: exit 2


def _truncated_results(tmp_path: Path) -> Path:
    path = _results(tmp_path, "cut", _cases())
    text = path.read_text()
    path.write_text(text[: len(text) * 2 // 3])
    return path


def _wrong_schema_results(tmp_path: Path) -> Path:
    path = _results(tmp_path, "future", _cases())
    data = json.loads(path.read_text())
    data["schema_version"] = 99
    return f.write_json(path, data)


def _wrong_type_in_case(tmp_path: Path) -> Path:
    path = _results(tmp_path, "typed", _cases())
    data = json.loads(path.read_text())
    data["cases"][2]["latency_ms"] = "fast"
    return f.write_json(path, data)


def _baseline_with_unknown_key(tmp_path: Path) -> Path:
    data = f.baseline({"ra/stern": "pass"}).model_dump() | {"threshold": 0.5}
    return f.write_json(tmp_path / "bad-baseline.json", data)


@pytest.mark.parametrize(
    ("make_args", "needles"),
    [
        (lambda t, b: [b, str(_truncated_results(t))], ["cut/results.json", "truncated JSON"]),
        (
            lambda t, b: [b, str(_wrong_schema_results(t))],
            ["future/results.json", "schema_version", "99", "reads version 1"],
        ),
        (
            lambda t, b: [b, str(_wrong_type_in_case(t))],
            ["typed/results.json", "case 'ra/helix'", "latency_ms"],
        ),
        (
            lambda t, b: [str(_baseline_with_unknown_key(t)), str(t / "base-run")],
            ["bad-baseline.json", "threshold", "unknown key"],
        ),
        (
            # Results where the baseline is expected, and the baseline second.
            lambda t, b: [str(t / "base-run"), b],
            ["scripted.json", "baseline", "goes first"],
        ),
        (lambda t, b: [b, b], ["scripted.json", "this is a baseline, expected run results"]),
        (lambda t, b: [b, str(t / "missing.json")], ["missing.json", "no such file"]),
    ],
    ids=[
        "truncated-results",
        "wrong-schema-results",
        "wrong-type-in-case",
        "baseline-unknown-key",
        "results-as-baseline",
        "baseline-as-results",
        "missing-file",
    ],
)
def test_malformed_compare_inputs_exit_2_without_traceback(
    tmp_path: Path, make_args: Any, needles: list[str]
) -> None:
    baseline = str(_baseline(tmp_path))
    proc = evalctl(tmp_path, "compare", *make_args(tmp_path, baseline))
    _clean(proc)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    for needle in needles:
        assert needle in proc.stderr, (needle, proc.stderr)
    assert proc.stdout == ""


# ------------------------------------------------------------------ baseline --from


def test_baseline_from_results_writes_the_provider_file(tmp_path: Path) -> None:
    results = _results(
        tmp_path, "r", [*_cases(), f.case("ra/extra", "skipped", skip_reason="no tools")]
    )
    proc = evalctl(tmp_path, "baseline", "--from", str(results.parent), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["path"] == "baselines/scripted.json"
    assert (out["total"], out["passed"], out["failed"], out["skipped"]) == (4, 3, 1, ["ra/extra"])
    written = json.loads((tmp_path / "baselines" / "scripted.json").read_text())
    assert written["baselines"] == {
        "ra/helix": "pass",
        "ra/k9s": "pass",
        "ra/stern": "pass",
        "ra/tflint": "fail",
    }


def test_baseline_below_the_bar_is_refused_and_not_written(tmp_path: Path) -> None:
    results = _results(tmp_path, "r", _cases(stern="fail", helix="fail"))
    proc = evalctl(tmp_path, "baseline", "--from", str(results))
    _clean(proc)
    assert proc.returncode == 1
    assert "only 1 of 4 scored cases passed (25%)" in proc.stderr
    assert str(results) in proc.stderr  # where to look
    assert not (tmp_path / "baselines").exists()
    lowered = evalctl(tmp_path, "baseline", "--from", str(results), "--min-pass-rate", "0.25")
    assert lowered.returncode == 0, lowered.stderr


def test_baseline_with_an_infra_error_is_refused(tmp_path: Path) -> None:
    results = _results(tmp_path, "r", _cases(helix="error"))
    proc = evalctl(tmp_path, "baseline", "--from", str(results), "--out", "b.json")
    assert proc.returncode == 1
    assert "infrastructure error (ra/helix)" in proc.stderr
    assert not (tmp_path / "b.json").exists()


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--min-pass-rate", "1.5"], "--min-pass-rate"),
        (["--suite", "ra"], "--suite"),
        (["--provider", "local"], "provider 'scripted', not 'local'"),
    ],
)
def test_baseline_bad_usage_exits_2(tmp_path: Path, extra: list[str], needle: str) -> None:
    results = _results(tmp_path, "r", _cases())
    proc = evalctl(tmp_path, "baseline", "--from", str(results), *extra)
    _clean(proc)
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr


def test_baseline_from_a_baseline_or_a_truncated_file_exits_2(tmp_path: Path) -> None:
    baseline = _baseline(tmp_path)
    proc = evalctl(tmp_path, "baseline", "--from", str(baseline))
    _clean(proc)
    assert proc.returncode == 2
    assert "this is a baseline, expected run results" in proc.stderr
    cut = evalctl(tmp_path, "baseline", "--from", str(_truncated_results(tmp_path)))
    _clean(cut)
    assert cut.returncode == 2 and "truncated JSON" in cut.stderr


# ------------------------------------------------------------------ end to end, in-process

PERFECT = """
[[cases."echo/hello"]]
content = "hello"

[[cases."echo/shout"]]
tool_calls = [{ name = "upper", arguments = { text = "hi" } }]

[[cases."echo/shout"]]
content = "HI"
"""


def test_baseline_from_a_new_run_then_compare_a_broken_run(
    echo_suite: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    good = tmp_path / "good.toml"
    good.write_text(PERFECT)
    common = ["--provider", "scripted", "--cases", str(echo_suite)]

    made = run_cli(capsys, "baseline", *common, "--script", str(good), "--json")
    assert made.code == 0, made.err
    out = json.loads(made.out)
    assert (out["path"], out["passed"]) == ("baselines/scripted.json", 2)
    assert Path(out["results_path"]).is_file()

    broken = tmp_path / "broken.toml"
    broken.write_text(PERFECT.replace('content = "hello"', 'content = "goodbye"'))
    ran = run_cli(capsys, "run", *common, "--script", str(broken), "--out", "now", "--json")
    assert ran.code == 0, ran.err

    compared = run_cli(capsys, "compare", "--gate", "strict", "baselines/scripted.json", "now")
    assert compared.code == 1
    assert "echo/hello" in compared.out
    assert "1 regression (echo/hello)" in compared.err


# ------------------------------------------------------------------ compare at scale


def _many(status: str, n: int) -> list[CaseResult]:
    return [
        f.case(f"big/c{i:03d}", status, failed_checks=("os_mapping",) if status == "fail" else ())
        for i in range(n)
    ]


def test_each_section_is_bounded_and_says_what_it_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = f.run(_many("pass", 40), run_id="big-base")
    write_run(run, tmp_path / "big-base")
    baseline = write_baseline(build_baseline(run), tmp_path / "big.json")
    worse = _results(tmp_path, "big-worse", _many("fail", 40))
    result = run_cli(capsys, "compare", str(baseline), str(worse))
    assert result.code == 1
    assert "big/c024" in result.out and "big/c025" not in result.out
    assert "15 more regressions not shown (of 40; --all" in result.out
    everything = run_cli(capsys, "compare", str(baseline), str(worse), "--all")
    assert everything.code == 1
    assert "big/c039" in everything.out and "more regressions not shown" not in everything.out
    # --json is never cut.
    as_json = run_cli(capsys, "compare", str(baseline), str(worse), "--json")
    assert len(json.loads(as_json.out)["regressions"]) == 40


def test_compare_does_not_read_the_conversations(tmp_path: Path) -> None:
    # A transcript the comparison never looks at does not stop it (other readers validate it).
    baseline = _baseline(tmp_path)
    path = _results(tmp_path, "odd", _cases())
    document = json.loads(path.read_text())
    document["cases"][0]["transcript"] = "not a list of turns"
    path.write_text(json.dumps(document))
    proc = evalctl(tmp_path, "compare", str(baseline), str(path))
    _clean(proc)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_suite_file_deleted_under_cases_dir_is_orphaned(
    echo_suite: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # --cases PATH says where suites live, not which to run: a suite file removed from that
    # directory since the baseline must gate (exit 1) as orphaned, not pass as "not selected".
    monkeypatch.chdir(tmp_path)
    cases_dir = echo_suite.parent
    second = cases_dir / "echo2.toml"
    second.write_text(echo_suite.read_text().replace('name = "echo"', 'name = "echo2"'))
    both = tmp_path / "both.toml"
    both.write_text(PERFECT + PERFECT.replace('"echo/', '"echo2/'))
    common = ["--provider", "scripted", "--cases", str(cases_dir)]
    made = run_cli(capsys, "baseline", *common, "--script", str(both), "--json")
    assert made.code == 0, made.err
    assert json.loads(made.out)["total"] == 4

    second.unlink()
    one = tmp_path / "one.toml"
    one.write_text(PERFECT)
    ran = run_cli(capsys, "run", *common, "--script", str(one), "--out", "now", "--json")
    assert ran.code == 0, ran.err

    compared = run_cli(capsys, "compare", "baselines/scripted.json", "now", "--json")
    assert compared.code == 1, compared.out
    out = json.loads(compared.out)
    assert out["orphaned"] == ["echo2/hello", "echo2/shout"]
    assert out["out_of_scope"] == 0
