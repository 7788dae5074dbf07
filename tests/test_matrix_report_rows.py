"""The matrix report shows what a promptfoo `view` user looks for (issue 31): each row's
values, the prompt each cell sent, the failure reason inside the cell, and, with
`report MATRIX_DIR --baseline DIR`, each cell's gate verdict and each case's change."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli_helpers import run_cli
from tests.test_html_report import find_browser

SUITE = """\
[suite]
name = "capitals"
kind = "assert"
cases_from = "rows.csv"
id_template = "{{ country | slug }}"

[suite.case_template]
input = { prompt = "Capital of {{ country }}?" }
[[suite.case_template.assert]]
type = "equals"
name = "capital"
value = "{{ capital }}"
"""

ROWS = "country,capital\nFrance,Paris\nPeru,Lima\n"


def _matrix(project: Path, capsys: pytest.CaptureFixture[str], out: Path, reply: str) -> None:
    script = project / "script.toml"
    script.write_text(f"[[default]]\ncontent = {json.dumps(reply)}\n")
    out.mkdir()
    ran = run_cli(
        capsys,
        *("run", "--provider", "scripted", "--model", "a", "--model", "b"),
        *("--script", str(script), "--cases", str(project / "capitals.toml")),
        *("--out", str(out), "--no-progress"),
    )
    assert ran.code == 0, ran.out + ran.err


@pytest.fixture
def runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, Path]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "rows.csv").write_text(ROWS)
    (project / "capitals.toml").write_text(SUITE)
    (project / "evalctl.toml").write_text(
        '[matrix]\nproviders = ["scripted"]\nprompts = { terse = "{{ prompt }} One word." }\n'
    )
    monkeypatch.chdir(project)
    first = tmp_path / "first"
    _matrix(project, capsys, first, "{{ capital }}")
    baselines = tmp_path / "baselines"
    written = run_cli(capsys, "baseline", "--from", str(first), "--out", str(baselines))
    assert written.code == 0, written.out + written.err
    # A planted regression: Peru answered wrong, in both cells.
    second = tmp_path / "second"
    _matrix(project, capsys, second, "{{ 'Cusco' if country == 'Peru' else capital }}")
    return first, second, baselines


def test_the_matrix_report_shows_row_values_prompts_and_reasons(
    runs: tuple[Path, Path, Path],
) -> None:
    _, second, _ = runs
    html = (second / "matrix.html").read_text()
    assert "country=Peru · capital=Lima" in html
    # The prompt each cell sent, its variant applied.
    assert "Capital of Peru? One word." in html
    assert "prompt sent" in html
    # The failure reason inside the cell, not only the check's name.
    assert "capital: " in html and "Cusco" in html
    markdown = (second / "matrix.md").read_text()
    assert "country=Peru" in markdown
    assert "capital: " in markdown


def test_report_against_a_baselines_directory_draws_each_cell_s_verdict(
    runs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second, baselines = runs
    page = tmp_path / "gated.html"
    shown = run_cli(
        capsys,
        *("report", str(second), "--baseline", str(baselines)),
        *("--html", str(page), "--markdown", "-"),
    )
    assert shown.code == 0, shown.out + shown.err
    html = page.read_text()
    assert html.count("FAILED") >= 2  # each cell's column
    assert "regression" in html
    assert "gate" in shown.out and "FAILED" in shown.out
    assert "scripted-a-terse" in shown.out
    # The unchanged run gates OK.
    again = run_cli(
        capsys,
        *("report", str(first), "--baseline", str(baselines), "--html", str(page), "--json"),
    )
    assert again.code == 0, again.out + again.err
    assert json.loads(again.out)["exit_code"] == 0
    assert "FAILED" not in page.read_text()


def test_a_cell_without_its_baseline_is_said_not_gated(
    runs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, second, baselines = runs
    (baselines / "scripted-b-terse.json").unlink()
    page = tmp_path / "p.html"
    shown = run_cli(
        capsys, "report", str(second), "--baseline", str(baselines), "--html", str(page)
    )
    assert shown.code == 0, shown.out + shown.err
    assert "NOT GATED" in page.read_text()
    assert "no baseline for this cell" in page.read_text()
    # A file, not a directory of baselines, is bad input naming it.
    wrong = run_cli(
        capsys,
        *("report", str(second), "--baseline", str(baselines / "scripted-a-terse.json")),
        *("--html", str(page)),
    )
    assert wrong.code == 2
    assert "--baseline" in wrong.err


@pytest.mark.browser
@pytest.mark.skipif(
    find_browser() is None,
    reason="no Chromium found (apt-get install chromium, or set EVALCTL_CHROMIUM)",
)
def test_the_gated_matrix_page_renders_in_headless_chromium(
    runs: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, second, baselines = runs
    page = tmp_path / "gated.html"
    shown = run_cli(
        capsys, "report", str(second), "--baseline", str(baselines), "--html", str(page)
    )
    assert shown.code == 0, shown.out + shown.err
    browser = find_browser()
    assert browser is not None
    proc = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    dom = proc.stdout
    assert "country=Peru" in dom, proc.stderr[-2000:]
    assert "Capital of Peru? One word." in dom
    assert "FAILED" in dom and "regression" in dom
