"""`evalctl report --markdown` renders run, soak and crash-test files into the runbooks'
results templates, and `--html` has a page for each kind. No model needed: the documents
are built here."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from evalctl.results.io import write_json_atomic, write_run
from evalctl.results.models import CaseDaemon, Environment
from evalctl.stability.crash import summarize_kills
from evalctl.stability.models import (
    CrashResult,
    CrashSettings,
    KillRecord,
    MemorySample,
    Probe,
    SoakDaemon,
    SoakRequest,
    SoakResult,
    SoakSettings,
    StabilityEnvironment,
)
from evalctl.stability.verdict import judge
from tests import factories as f
from tests.cli_helpers import run_cli

MIB = 1024 * 1024
REPO = Path(__file__).resolve().parent.parent
SHA = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def environment() -> StabilityEnvironment:
    return StabilityEnvironment(
        host="bench-1",
        platform="Linux",
        cpu="Test CPU @ 2.5GHz",
        cpu_count=2,
        ram_bytes=24 * 1024**3,
        python="3.11.7",
        evalctl="0.1.0",
        llama_cpp="0.3.36",
        model_name="smollm2-135m-instruct-q4_1",
        model_sha256=SHA,
        n_threads=1,
        n_ctx=4096,
    )


def soak(anon_mib: list[float], warmup: int = 2) -> SoakResult:
    samples = [
        MemorySample(
            request=i,
            elapsed_s=float(i),
            rss_bytes=int((a + 130) * MIB),
            uss_bytes=int((a + 1) * MIB),
            anon_bytes=int(a * MIB),
        )
        for i, a in enumerate(anon_mib)
    ]
    requests = len(anon_mib) - 1
    return SoakResult(
        soak_id="20260101-000000-soak-abcd",
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:05:00+00:00",
        evalctl_version="0.1.0",
        environment=environment(),
        daemon=SoakDaemon(pid=4242, requests_served_after=requests),
        settings=SoakSettings(
            requests=requests,
            warmup=warmup,
            sample_every=1,
            threshold_pct=5.0,
            timeout_s=120.0,
            suites=["asset-triage"],
            cases=["asset-triage/a", "asset-triage/b"],
        ),
        samples=samples,
        requests=[
            SoakRequest(index=i, case="asset-triage/a", latency_ms=800.0, stop_reason="end_turn")
            for i in range(1, requests + 1)
        ],
        verdict=judge([(s.request, s.anon_bytes) for s in samples], warmup=warmup),
    )


def crash(recovered: bool = True) -> CrashResult:
    kills = [
        KillRecord(
            n=1,
            mode="mid-generation",
            killed_pid=100,
            failure_seen="ServerCrashedError: the inference daemon (pid 100) died",
            detected=True,
            detection_ms=42.0,
            stale_socket_left=True,
            lock_released=True,
            recovered=True,
            new_pid=101,
            recovery_ms=1900.0,
            lock_owner_ok=True,
        ),
        KillRecord(
            n=2,
            mode="between-requests",
            killed_pid=101,
            failure_seen="lifecycle: pid gone; status: not running",
            detected=True,
            detection_ms=12.0,
            stale_socket_left=True,
            lock_released=True,
            recovered=recovered,
            new_pid=102 if recovered else None,
            recovery_ms=2100.0 if recovered else None,
            lock_owner_ok=recovered,
            error=None if recovered else "the request after the kill failed: boom",
        ),
    ]
    return CrashResult(
        crash_id="20260101-000000-crash-abcd",
        started_at="2026-01-01T00:00:00+00:00",
        finished_at="2026-01-01T00:01:00+00:00",
        evalctl_version="0.1.0",
        environment=environment(),
        settings=CrashSettings(kills=2, mid_generation=True, timeout_s=120.0),
        probe=Probe(pid=100, latency_ms=700.0, ok=True),
        kills=kills,
        summary=summarize_kills(kills),
        passed=recovered,
    )


def benchmark_run(tmp_path: Path) -> Path:
    cases = [
        f.case("asset-triage/a", "pass", latency_ms=900.0),
        f.case("asset-triage/b", "error", error="daemon died"),
    ]
    cases[0].daemon = CaseDaemon(pid=11, start_ms=1500.0, duration_ms=950.0)
    cases[1].daemon = CaseDaemon(
        pid=12,
        final_pid=13,
        start_ms=1600.0,
        duration_ms=3000.0,
        transport_errors=["ServerCrashedError: the inference daemon (pid 12) died"],
    )
    run = f.run(cases)
    run.settings.restart_per_case = True
    run.settings.cooldown_s = 5.0
    run.environment = Environment(**environment().model_dump(include=set(Environment.model_fields)))
    return write_run(run, tmp_path / "run")


def table_headers(markdown: str) -> list[str]:
    """Every table header row ("| a | b |") of a Markdown text, in order."""
    lines = markdown.splitlines()
    return [
        line.strip()
        for line, below in itertools.pairwise(lines)
        if line.startswith("|") and re.fullmatch(r"\|(---\|)+", below.strip())
    ]


def is_run_of(part: list[str], whole: list[str]) -> bool:
    """Whether `part` appears in `whole` as consecutive items."""
    return any(whole[i : i + len(part)] == part for i in range(len(whole) - len(part) + 1))


def template_of(runbook: str) -> str:
    """The results template of a runbook: what follows its "## Results template" heading."""
    text = (REPO / "runbooks" / runbook).read_text()
    return text.split("## Results template", 1)[1]


# ---------------------------------------------------------------- soak


def test_soak_markdown_to_stdout(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = soak([150, 180, 180, 180.2, 180.1, 180.3])
    write_json_atomic(tmp_path / "soak.json", result)
    done = run_cli(capsys, "report", str(tmp_path), "--markdown", "-")
    assert done.code == 0, done.err
    md = done.out
    assert "## Soak · smollm2-135m-instruct-q4\\_1 · **no leak**" in md
    assert SHA in md and "bench-1" in md and "0.3.36" in md and "24.0 GiB" in md
    # request #, RSS, USS, anon, delta from the post-warm-up baseline
    assert "| 0 | 280.0 MiB | 151.0 MiB | 150.0 MiB | -30.00 MiB | warm-up |" in md
    assert "| 5 | 310.3 MiB | 181.3 MiB | 180.3 MiB | +0.30 MiB |  |" in md
    assert "wrote" not in md  # only the Markdown went to stdout


def test_soak_markdown_matches_the_runbook_template(tmp_path: Path) -> None:
    from evalctl.reports.runbook import soak_markdown

    md = soak_markdown(soak([150, 180, 185, 190, 195, 200, 205]))
    assert "**leak**" in md
    assert table_headers(md) == table_headers(template_of("soak.md"))


def test_soak_html_page_and_chart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from evalctl.reports.soak_page import memory_chart_svg

    result = soak([150, 180, 180, 180.2, 180.1, 180.3])
    write_json_atomic(tmp_path / "soak.json", result)
    html = tmp_path / "soak.html"
    done = run_cli(capsys, "report", str(tmp_path / "soak.json"), "--html", str(html))
    assert done.code == 0, done.err
    page = ET.fromstring(html.read_text().removeprefix("<!DOCTYPE html>\n"))
    text = "".join(page.itertext())
    assert "no leak" in text and "Anonymous memory (judged)" in text
    svg = memory_chart_svg(result)
    root = ET.fromstring(svg.split("\n", 1)[1])
    assert len(root.findall("{http://www.w3.org/2000/svg}svg")) == 2  # two stacked charts
    # No reference to anything outside the file.
    assert "href" not in svg and "http://www.w3.org/2000/svg" in svg


def test_soak_report_refuses_a_baseline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_json_atomic(tmp_path / "soak.json", soak([150, 180, 180, 180]))
    baseline = f.write_json(tmp_path / "b.json", f.baseline({"a/b": "pass"}).model_dump())
    done = run_cli(
        capsys, "report", str(tmp_path), "--html", str(tmp_path / "x.html"), "-b", str(baseline)
    )
    assert done.code == 2 and "--baseline" in done.err


# ---------------------------------------------------------------- crash-test


def test_crash_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_json_atomic(tmp_path / "crash-test.json", crash())
    out = tmp_path / "crash.md"
    done = run_cli(capsys, "report", str(tmp_path), "--markdown", str(out))
    assert done.code == 0, done.err
    md = out.read_text()
    assert "## Crash test · smollm2-135m-instruct-q4\\_1 · **PASSED**" in md
    assert "| 2 / 2 | 27 ms | 42 ms | 2000 ms | 2100 ms | 700 ms |" in md
    assert (
        "| 1 | mid-generation | 100 | ServerCrashedError: the inference daemon (pid 100) died" in md
    )
    assert SHA in md
    assert is_run_of(table_headers(md), table_headers(template_of("new-model-validation.md")))


def test_failed_crash_markdown_says_why() -> None:
    from evalctl.reports.runbook import crash_markdown

    md = crash_markdown(crash(recovered=False))
    assert "**FAILED**" in md and "boom" in md


def test_crash_html_page(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_json_atomic(tmp_path / "crash-test.json", crash())
    html = tmp_path / "c.html"
    done = run_cli(capsys, "report", str(tmp_path), "--html", str(html))
    assert done.code == 0, done.err
    text = "".join(ET.fromstring(html.read_text().removeprefix("<!DOCTYPE html>\n")).itertext())
    assert "PASSED" in text and "mid-generation" in text and SHA in text


# ---------------------------------------------------------------- full benchmark (a run)


def test_run_markdown_is_the_full_benchmark_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = benchmark_run(tmp_path)
    out = results.parent / "benchmark.md"
    done = run_cli(capsys, "report", str(results), "--markdown", str(out), "--json")
    assert done.code == 0, done.err
    md = out.read_text()
    assert "fresh daemon per case (--restart-per-case), cooldown 5s" in md
    assert "| asset-triage/a | pass | 950 ms | 11 | 1500 ms |" in md
    assert "| asset-triage/b | error | 3000 ms | 12 → 13 | 1600 ms |" in md
    assert "ServerCrashedError" in md
    assert table_headers(md) == table_headers(template_of("full-benchmark.md"))
    assert md.startswith("## Full benchmark · scripted · ")


def test_a_plain_run_is_titled_a_run_report_not_a_full_benchmark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = write_run(f.run([f.case("asset-triage/a", "pass")]), tmp_path / "plain")
    done = run_cli(capsys, "report", str(results), "--markdown", "-")
    assert done.code == 0, done.err
    assert done.out.startswith("## Run report · scripted · ")
    assert "Full benchmark" not in done.out
    assert "one daemon for the whole run" in done.out


def test_both_renderings_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = benchmark_run(tmp_path)
    html, md = results.parent / "r.html", results.parent / "r.md"
    done = run_cli(capsys, "report", str(results), "--html", str(html), "--markdown", str(md))
    assert done.code == 0, done.err
    assert html.is_file() and md.is_file()
    assert str(md) in done.out and str(html) in done.out


# ---------------------------------------------------------------- usage errors


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            {"kind": "bogus", "schema_version": 1},
            "reports exist for: baseline, crash-test, run, soak",
        ),
        ({"kind": "soak", "schema_version": 2}, "unsupported schema_version 2"),
        ({"kind": "soak", "schema_version": 1}, "required key is missing"),
    ],
)
def test_bad_documents_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    document: dict[str, object],
    message: str,
) -> None:
    path = f.write_json(tmp_path / "x.json", document)
    done = run_cli(capsys, "report", str(path), "--markdown", str(tmp_path / "x.md"))
    assert done.code == 2
    assert message in done.err


def test_report_needs_an_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_json_atomic(tmp_path / "soak.json", soak([150, 180, 180, 180]))
    done = run_cli(capsys, "report", str(tmp_path))
    assert done.code == 2 and "--markdown" in done.err


# ---------------------------------------------------------------- terminal tables


def test_terminal_tables(capsys: pytest.CaptureFixture[str]) -> None:
    """What `evalctl soak` and `evalctl crash-test` print without --json."""
    from evalctl.cli import crash_test
    from evalctl.cli import soak as soak_cli

    soak_cli._render(
        soak_cli.SoakOutput(
            files=soak_cli.SoakFilesOut(
                out_dir="d", json_path="d/soak.json", toml_path="t", chart_path="c", html_path="h"
            ),
            result=soak([150, 180, 180, 180.2, 180.1, 180.3]).model_dump(mode="json"),
        )
    )
    crash_test._render(
        crash_test.CrashOutput(
            files=crash_test.CrashFilesOut(
                out_dir="d", json_path="d/crash-test.json", toml_path="t", html_path="h"
            ),
            result=crash(recovered=False).model_dump(mode="json"),
        )
    )
    out = capsys.readouterr().out
    assert "no leak" in out and "180.3 MiB" in out and "+0.30 MiB" in out
    assert "ServerCrashedError" in out and "pid gone" in out and "FAILED" in out
    assert "1/2" in out  # recovered
