"""examples/support: an assert suite with a fixture-backed tool, a command-backed tool and a
JSON answer (output_schema). From a directory that is not the suite's, it validates, runs
on the scripted provider, baselines, and `compare` gates a planted regression naming the
case. docs/writing-suites.md walks through this suite."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.assert_helpers import evalctl
from tests.conftest import REPO

EXAMPLE = REPO / "examples" / "support"
SUITE = EXAMPLE / "support.toml"
REPLIES = EXAMPLE / "replies.toml"


def test_validates_runs_baselines_and_gates_a_regression(tmp_path: Path) -> None:
    # A copy outside the repository: evalctl.toml is found from a suite's folder upward, and
    # the repository's would send the baseline and results into the repository itself.
    example = tmp_path / "example"
    shutil.copytree(EXAMPLE, example)
    suite = example / "support.toml"
    scripted = ["--provider", "scripted", "--cases", str(suite)]
    checked = evalctl(tmp_path, "cases", "validate", str(suite), "--script", str(REPLIES))
    assert checked.returncode == 0, checked.stderr

    made = evalctl(tmp_path, "baseline", *scripted, "--script", str(REPLIES), "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["passed"] == 4
    baseline = tmp_path / "baselines" / "scripted.json"
    assert baseline.is_file()

    # The command-backed tool ran and the spy kept what it returned.
    results = json.loads((tmp_path / json.loads(made.stdout)["results_path"]).read_text())
    refund = next(c for c in results["cases"] if c["id"] == "refund-request")
    quote = next(c for c in refund["tool_calls"] if c["name"] == "refund_quote")
    assert quote["data"]["value"] == {"refundable": True, "amount": 89.99, "currency": "EUR"}
    # The unknown order came back to the model as a tool error, and the case still passed.
    unknown = next(c for c in results["cases"] if c["id"] == "unknown-order")
    assert unknown["status"] == "pass" and unknown["tool_calls"][0]["is_error"] is True

    # Planted regression: the refund email is now filed under shipping.
    regressed = tmp_path / "regressed.toml"
    regressed.write_text(
        REPLIES.read_text().replace('"category": "refund"', '"category": "shipping"')
    )
    ran = evalctl(tmp_path, "run", *scripted, "--script", str(regressed), "--out", "now")
    assert ran.returncode == 0, ran.stderr
    # One sample on each side: only the strict rule calls a single flip a regression.
    compared = evalctl(tmp_path, "compare", "--gate", "strict", str(baseline), "now")
    assert compared.returncode == 1, compared.stdout + compared.stderr
    assert "support-triage/refund-request" in compared.stdout + compared.stderr
    assert "where-is-my-order" not in compared.stderr

    same = evalctl(tmp_path, "run", *scripted, "--script", str(REPLIES), "--out", "again")
    assert same.returncode == 0, same.stderr
    assert evalctl(tmp_path, "compare", str(baseline), "again").returncode == 0


def test_output_schema_is_checked_on_every_answer(tmp_path: Path) -> None:
    # An unconstrained provider (here: scripted) may break the schema; the check says so.
    broken = tmp_path / "broken.toml"
    broken.write_text(REPLIES.read_text().replace('"priority": "low"', '"priority": "whenever"'))
    ran = evalctl(
        tmp_path, "run", "--provider", "scripted", "--cases", str(SUITE),
        "--script", str(broken), "--case", "spam", "--out", "out",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    (case,) = json.loads((tmp_path / "out" / "results.json").read_text())["cases"]
    schema = next(c for c in case["checks"] if c["name"] == "output_schema")
    assert schema["status"] == "fail"
    assert "priority: 'whenever' is not one of" in schema["message"]
