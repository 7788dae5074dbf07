"""The Markdown summary: headline numbers, what needs attention, and $GITHUB_STEP_SUMMARY."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalctl.reports.markdown import cell, to_markdown, write_markdown
from evalctl.results.models import Attempt, CheckResult, RunResult
from tests import factories as f
from tests.cli_helpers import run_cli


def sample_run() -> RunResult:
    failed = f.case("alpha/wrong", "fail").model_copy(
        update={
            "checks": [
                CheckResult(
                    name="answer",
                    passed=False,
                    expected="a|b",
                    actual="<script>x</script>",
                    message="the answer differs",
                ),
                CheckResult(name="extra", status="n/a", message="no rows to check"),
            ]
        }
    )
    flaky = f.case("beta/sometimes", "flaky").model_copy(
        update={
            "attempts": [Attempt(status=s, latency_ms=5.0) for s in ("pass", "fail", "pass")],
            "pass_ci_low": 0.2077,
            "pass_ci_high": 0.9385,
        }
    )
    return f.run(
        [
            f.case("alpha/right"),
            failed,
            f.case("alpha/boom", "error", error="connection refused"),
            f.case("beta/skip", "skipped", skip_reason="needs 'tools'"),
            flaky,
        ]
    )


def table_rows(text: str, heading: str) -> list[list[str]]:
    """The body rows of the first table after `heading`, split into cells."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    rows = []
    for line in lines[start + 1 :]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split(" | ")])
        elif rows:
            break
    return rows[2:]  # header and separator


def test_headline_and_sections() -> None:
    text = to_markdown(sample_run())
    assert text.startswith("## evalctl · scripted · script")
    assert "**1/5 passed**" in text
    assert "1 failed · 1 flaky · 1 error · 1 skipped" in text
    assert "checks: 1 passed · 1 failed · 1 n/a" in text
    assert table_rows(text, "<details><summary>n/a checks (1)") == [
        ["alpha/wrong", "extra", "no rows to check"]
    ]
    assert table_rows(text, "### 💥 Errors") == [["alpha/boom", "connection refused"]]
    assert table_rows(text, "### ⏭️ Skipped") == [["beta/skip", "needs 'tools'"]]
    assert table_rows(text, "### 🎲 Flaky") == [["beta/sometimes", "2/3 (21%-94%)"]]
    assert "<details><summary>All 5 cases</summary>" in text


def test_failed_checks_show_expected_and_actual_escaped() -> None:
    text = to_markdown(sample_run())
    rows = table_rows(text, "### ❌ Failed")
    # The pipe is escaped so the row keeps five cells; markup is shown, not rendered; the
    # check's reason is there, so nobody needs results.json to know why it failed.
    assert rows == [
        ["alpha/wrong", "answer", "a\\|b", "&lt;script&gt;x&lt;/script&gt;", "the answer differs"]
    ]
    assert "<script>" not in text


def test_cell_is_one_bounded_line() -> None:
    assert cell("a\nb\r\nc") == "a b c"
    assert len(cell("x" * 500)) <= 160
    assert cell({"k": [1, 2]}) == '{"k": \\[1, 2\\]}'


def test_cell_makes_nul_ansi_and_bidi_controls_visible() -> None:
    text = cell("a\x00b\x1b[31mred\x1b[0m\u202eevil\x7f\x9b")
    assert text == "a␀b␛\\[31mred␛\\[0m&lt;U+202E&gt;evil␡&lt;U+009B&gt;"
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in text)


def test_quiet_run_has_no_attention_sections() -> None:
    text = to_markdown(f.run([f.case("s/a"), f.case("s/b")]))
    assert "### " not in text
    assert "**2/2 passed**" in text


def test_write_appends_to_the_github_step_summary(tmp_path: Path) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")
    path = tmp_path / "md" / "run.md"
    text = write_markdown(sample_run(), path, {"GITHUB_STEP_SUMMARY": str(summary)})
    assert text == to_markdown(sample_run())
    assert path.read_text() == to_markdown(sample_run())
    assert summary.read_text() == "earlier step\n" + to_markdown(sample_run()) + "\n"


def test_run_writes_markdown(
    echo_suite: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    script = tmp_path / "script.toml"
    script.write_text('[[default]]\ncontent = "nope"\n')
    summary = tmp_path / "gh_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    md = tmp_path / "summary.md"
    done = run_cli(
        capsys, "run", "--provider", "scripted", "--script", str(script), "--cases",
        str(echo_suite), "--out", str(tmp_path / "out"), "--markdown", str(md), "--json",
    )  # fmt: skip
    assert done.code == 0, done.err
    assert json.loads(done.out)["markdown_path"] == str(md)
    assert "**0/2 passed**" in md.read_text()
    assert summary.read_text().startswith("## evalctl · scripted")


def test_run_markdown_dash_prints_to_standard_output(
    echo_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    # As in `report --markdown -`; it once wrote a file named "-" in the working directory.
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    script = tmp_path / "script.toml"
    script.write_text('[[default]]\ncontent = "nope"\n')
    args = ["run", "--provider", "scripted", "--script", str(script), "--cases", str(echo_suite)]
    done = run_cli(capsys, *args, "--out", "out", "--no-progress", "--markdown", "-")
    assert done.code == 0, done.err
    assert "**0/2 passed**" in done.out
    assert done.out.index("results: ") < done.out.index("**0/2 passed**")
    assert not (tmp_path / "-").exists()
    refused = run_cli(capsys, *args, "--out", "out2", "--markdown", "-", "--json")
    assert refused.code == 2
    assert "--markdown" in refused.err
