"""examples/app's golden-query example, the Cellar: its JSONL golden file drives
`tool-called` args and `tool-result` from each row, `names-in` checks every wine named
against the real SQLite catalog, the python target calls `answer(question=...)`, the http
suite is skipped with the reason until its server answers, and a regression planted in the
application's synonym mapping makes `compare` exit 1 naming the case. Run on a copy, from
another directory, with no model. docs/targets.md walks through it."""

# Russian words, the customers' own: Cyrillic letters here are words, not look-alikes.
# ruff: noqa: RUF001
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
GOLDEN_IDS = [
    "ru-red-dry-under-20",
    "ru-white-dry-under-10",
    "ru-semi-sweet-red",
    "en-sweet-white",
    "en-dry-rose",
    "en-bubbly-under-12",
    "en-barbecue",
    "en-oysters",
]


@pytest.fixture
def app_copy(tmp_path: Path) -> Path:
    """The example, copied, its catalog built by the example's own script: regressions are
    planted in the copy, never in the repository."""
    copy = tmp_path / "app"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("*.db", "__pycache__"))
    built = subprocess.run(
        [sys.executable, "-m", "cellar.db"], cwd=copy, capture_output=True, text=True, check=True
    )
    assert Path(built.stdout.strip()) == copy / "cellar" / "wines.db"
    return copy


@pytest.fixture
def server(app_copy: Path) -> Iterator[str]:
    command = [sys.executable, "-m", "cellar.server", "0"]
    proc = subprocess.Popen(command, cwd=app_copy, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield f"http://127.0.0.1:{int(proc.stdout.readline())}"
    finally:
        proc.kill()
        proc.wait()


def _cases(out: Path) -> dict[str, dict[str, object]]:
    results = json.loads((out / "results.json").read_text())
    return {case["id"]: case for case in results["cases"]}


def _checks(case: dict[str, object]) -> dict[str, dict[str, object]]:
    checks = case["checks"]
    assert isinstance(checks, list)
    return {check["name"]: check for check in checks}


def test_golden_rows_drive_the_checks_and_a_synonym_regression_gates(
    tmp_path: Path, app_copy: Path
) -> None:
    suite = str(app_copy / "cellar.toml")
    work = tmp_path / "elsewhere"
    work.mkdir()
    made = evalctl(work, "baseline", "--cases", suite, "--json")
    assert made.returncode == 0, made.stdout + made.stderr
    assert json.loads(made.stdout)["passed"] == len(GOLDEN_IDS)
    baseline = work / "baselines" / "python.json"
    cases = _cases((work / json.loads(made.stdout)["results_path"]).parent)
    assert list(cases) == GOLDEN_IDS
    first = cases["ru-red-dry-under-20"]
    # answer(question=...) was called with the row's question alone.
    assert first["input"] == {"prompt": None, "messages": None, "question": (
        "Посоветуй красное сухое вино до 20 евро"
    )}  # fmt: skip
    checks = _checks(first)
    assert checks["tool"]["expected"] == {
        "name": "search_wines",
        "args": {"color": "red", "sweetness": "dry", "max_price": 20},
    }
    assert checks["results"]["expected"] == {"name": "search_wines", "min_items": 3}
    assert checks["no-invented-wines"]["status"] == "pass"
    calls = first["tool_calls"]
    assert isinstance(calls, list)
    assert calls[0]["normalized_arguments"] == {
        "color": "red",
        "sweetness": "dry",
        "max_price": 20.0,
    }

    # Planted: the Russian word for red now maps to rosé, in the application's own code.
    search = app_copy / "cellar" / "search.py"
    search.write_text(search.read_text().replace('"красное": "red"', '"красное": "rose"'))
    ran = evalctl(work, "run", "--cases", suite, "--out", "now")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    now = _cases(work / "now")
    assert now["ru-red-dry-under-20"]["status"] == "fail"
    tool = _checks(now["ru-red-dry-under-20"])["tool"]
    assert "color: expected 'red', got 'rose'" in str(tool["message"])
    # One sample on each side: the strict rule calls a single flip a regression.
    compared = evalctl(work, "compare", "--gate", "strict", str(baseline), "now")
    assert compared.returncode == 1, compared.stdout + compared.stderr
    assert "cellar/ru-red-dry-under-20" in compared.stdout + compared.stderr
    assert "cellar/en-sweet-white" not in compared.stdout + compared.stderr


def test_an_invented_wine_fails_names_in(tmp_path: Path, app_copy: Path) -> None:
    assistant = app_copy / "cellar" / "assistant.py"
    invent = "**{w['name'].replace('Rioja', 'Ribera')}**"
    assistant.write_text(assistant.read_text().replace("**{w['name']}**", invent))
    ran = evalctl(tmp_path, "run", "--cases", str(app_copy / "cellar.toml"), "--out", "out")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    cases = _cases(tmp_path / "out")
    invented = _checks(cases["ru-red-dry-under-20"])["no-invented-wines"]
    assert invented["status"] == "fail"
    assert "'Ribera Crianza'" in str(invented["message"])
    assert "Malbec" not in str(invented["message"])
    assert _checks(cases["en-sweet-white"])["no-invented-wines"]["status"] == "pass"


def test_the_http_suite_is_skipped_until_its_server_answers(
    tmp_path: Path, app_copy: Path, server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = str(app_copy / "cellar_http.toml")
    monkeypatch.delenv("CELLAR_URL", raising=False)
    unset = evalctl(tmp_path, "run", "--cases", suite, "--out", "unset")
    assert unset.returncode == 0, unset.stdout + unset.stderr
    for case in _cases(tmp_path / "unset").values():
        assert case["status"] == "skipped"
        assert case["skip_reason"] == (
            "requirement 'env:CELLAR_URL' not met: environment variable CELLAR_URL is not set"
        )

    monkeypatch.setenv("CELLAR_URL", "http://127.0.0.1:9")  # nothing answers there
    down = evalctl(tmp_path, "run", "--cases", suite, "--out", "down")
    assert down.returncode == 0, down.stdout + down.stderr
    reasons = {c["skip_reason"] for c in _cases(tmp_path / "down").values()}
    assert len(reasons) == 1
    assert "requirement 'http:${CELLAR_URL}/health' not met" in str(reasons.pop())

    monkeypatch.setenv("CELLAR_URL", server)
    up = evalctl(tmp_path, "run", "--cases", suite, "--out", "up")
    assert up.returncode == 0, up.stdout + up.stderr
    cases = _cases(tmp_path / "up")
    assert {c["status"] for c in cases.values()} == {"pass"}
    # The spies saw nothing in the server's process: these are its own report of its calls.
    calls = cases["en-bubbly-under-12"]["tool_calls"]
    assert isinstance(calls, list)
    assert [(c["name"], c["arguments"]) for c in calls] == [
        ("search_wines", {"color": "sparkling", "max_price": 12.0})
    ]
