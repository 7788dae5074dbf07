"""examples/app: the Bookshop application tested through the `python` target with spies and
through the `http` target against its own server (a real process on a real socket), from a
directory that is not the suite's; a regression planted in the application's code makes
`compare` exit 1 naming the case. docs/targets.md walks through this example."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli_helpers import evalctl
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "app"


@pytest.fixture
def app_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example, copied: the regression is planted in the copy, never in the repository."""
    copy = tmp_path / "app"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("*.db", "__pycache__"))
    monkeypatch.setenv("BOOKSHOP_DB", str(tmp_path / "books.db"))
    return copy


@pytest.fixture
def server(app_copy: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("BOOKSHOP_TOKEN", "bookshop-test-token")
    proc = subprocess.Popen(
        [sys.executable, "-m", "bookshop.server", "0"],
        cwd=app_copy,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        url = f"http://127.0.0.1:{port}"
        monkeypatch.setenv("BOOKSHOP_URL", url)
        yield url
    finally:
        proc.kill()
        proc.wait()


def _cases(out: Path) -> dict[str, dict[str, object]]:
    results = json.loads((out / "results.json").read_text())
    return {case["id"]: case for case in results["cases"]}


def test_python_target_baselines_and_gates_a_planted_regression(
    tmp_path: Path, app_copy: Path
) -> None:
    suite = str(app_copy / "bookshop.toml")
    work = tmp_path / "elsewhere"
    work.mkdir()
    made = evalctl(work, "baseline", "--cases", suite, "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["passed"] == 4
    baseline = work / "baselines" / "python.json"
    assert baseline.is_file()
    cases = _cases((work / json.loads(made.stdout)["results_path"]).parent)
    unknown = cases["unknown-title"]["tool_calls"]
    assert isinstance(unknown, list) and unknown[0]["is_error"] is True  # it raised

    # Planted: the price now includes VAT twice, in the application's own code.
    assistant = app_copy / "bookshop" / "assistant.py"
    assistant.write_text(
        assistant.read_text().replace("{found['price']:.2f}", "{found['price'] * 1.2:.2f}")
    )
    ran = evalctl(work, "run", "--cases", suite, "--out", "now")
    assert ran.returncode == 0, ran.stderr
    # One sample on each side: only the strict rule calls a single flip a regression.
    compared = evalctl(work, "compare", "--gate", "strict", str(baseline), "now")
    assert compared.returncode == 1, compared.stdout + compared.stderr
    assert "bookshop/price-of-a-book" in compared.stdout + compared.stderr
    assert "bookshop/recommend-wine" not in compared.stderr


def test_http_target_against_the_apps_server(tmp_path: Path, server: str, app_copy: Path) -> None:
    suite = str(app_copy / "bookshop.toml")
    made = evalctl(tmp_path, "baseline", "--cases", suite, "--provider", "http", "--json")
    assert made.returncode == 0, made.stdout + made.stderr
    assert json.loads(made.stdout)["passed"] == 4
    assert (tmp_path / "baselines" / "http.json").is_file()
    again = evalctl(tmp_path, "run", "--cases", suite, "--provider", "http", "--out", "again")
    assert again.returncode == 0, again.stderr
    cases = _cases(tmp_path / "again")
    # The spies saw nothing (the calls ran in the server's process): these are the server's
    # own report of its calls.
    calls = cases["price-of-a-book"]["tool_calls"]
    assert isinstance(calls, list) and [c["name"] for c in calls] == ["price_of"]
    assert calls[0]["data"]["value"]["price"] == 30.0
    compared = evalctl(
        tmp_path, "compare", "--gate", "strict", str(tmp_path / "baselines" / "http.json"), "again"
    )
    assert compared.returncode == 0, compared.stdout + compared.stderr
