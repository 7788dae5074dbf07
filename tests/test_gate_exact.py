"""The exact rule: cases whose answers cannot vary (the scripted provider, a case no model
answers, a target declared deterministic) gate on any pass -> fail under the default gate,
against a one-sample baseline, through the real entry point."""

from __future__ import annotations

import shutil
from pathlib import Path

from evalctl.baselines.statistical import exact_case
from evalctl.results.io import read_run
from tests.cli_helpers import evalctl

REPO = Path(__file__).resolve().parent.parent
PERFECT = REPO / "cases" / "scripts" / "release-assets.perfect.toml"
RETRIEVAL = REPO / "examples" / "retrieval"
RIGHT_K9S = 'os_mapping = { linux = "Linux", darwin = "Darwin" }, arch_mapping = { amd64 = "amd64"'


def test_the_readmes_scripted_regression_gates_under_the_default_rule(tmp_path: Path) -> None:
    source = PERFECT.read_text()
    k9s = source.index('"release-assets/k9s"')
    assert RIGHT_K9S in source[k9s:]
    broken = tmp_path / "broken.toml"
    # The k9s recipe maps linux to linux while the assets say Linux: one case breaks.
    broken.write_text(
        source[:k9s] + source[k9s:].replace(RIGHT_K9S, RIGHT_K9S.replace('"Linux"', '"linux"'), 1)
    )
    # A copy outside the repository (its evalctl.toml would place the outputs in the repo).
    shutil.copytree(REPO / "cases", tmp_path / "cases")
    suite = str(tmp_path / "cases" / "release-assets.toml")
    good = evalctl(tmp_path, "run", "--provider", "scripted", "--script", str(PERFECT),
                   "--cases", suite, "--out", "good", "--no-progress")  # fmt: skip
    assert good.returncode == 0, good.stderr
    made = evalctl(tmp_path, "baseline", "--from", "good", "--out", "scripted.json")
    assert made.returncode == 0, made.stderr
    now = evalctl(tmp_path, "run", "--provider", "scripted", "--script", str(broken),
                  "--cases", suite, "--out", "broken", "--no-progress",
                  "--baseline", "scripted.json")  # fmt: skip
    assert now.returncode == 0, now.stderr
    gated = evalctl(tmp_path, "compare", "scripted.json", "broken")
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "judged by: release-assets: exact" in gated.stdout
    assert "quality gate failed: 1 regression (release-assets/k9s)" in gated.stderr
    # Nothing changed: the same script again passes the gate.
    again = evalctl(tmp_path, "compare", "scripted.json", "good")
    assert again.returncode == 0, again.stdout


def test_a_planted_retrieval_break_gates_under_the_default_rule(tmp_path: Path) -> None:
    # A copy outside the repository: evalctl.toml is found from a suite's folder upward, and
    # the repository's would send the baseline into its own baselines/.
    example = tmp_path / "example"
    shutil.copytree(RETRIEVAL, example)
    made = evalctl(tmp_path, "baseline", "--provider", "scripted", "--cases", str(example))
    assert made.returncode == 0, made.stderr
    broken = tmp_path / "broken"
    shutil.copytree(RETRIEVAL, broken)
    tool = broken / "winesearch.py"
    tool.write_text(tool.read_text().replace("(-item[0], item[1])", "(item[0], item[1])"))
    ran = evalctl(tmp_path, "run", "--provider", "scripted", "--cases", str(broken),
                  "--out", "now", "--no-progress")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    gated = evalctl(tmp_path, "compare", "baselines/scripted.json", "now")
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "wine-search: exact" in gated.stdout
    assert "wine-search/berry-notes" in gated.stderr


def test_a_deterministic_target_is_compared_exactly(tmp_path: Path) -> None:
    app = tmp_path / "app.py"
    app.write_text("ANSWER = 'hello'\n\ndef answer(case):\n    return ANSWER\n")
    suite = tmp_path / "hello.toml"
    suite.write_text(
        '[suite]\nname = "hello"\nkind = "assert"\n'
        '[[suite.target]]\ntype = "python"\nfunction = "app:answer"\ndeterministic = true\n'
        '[[case]]\nid = "greets"\ninput = { prompt = "say hello" }\n'
        '[[case.assert]]\ntype = "contains"\nvalue = "hello"\n'
        '[[case]]\nid = "other"\ninput = { prompt = "say hello" }\n'
        '[[case.assert]]\ntype = "icontains"\nvalue = "HELLO"\n'
    )
    base = evalctl(tmp_path, "baseline", "--cases", str(suite), "--out", "b.json")
    assert base.returncode == 0, base.stdout + base.stderr
    app.write_text("ANSWER = 'goodbye'\n\ndef answer(case):\n    return ANSWER\n")
    ran = evalctl(tmp_path, "run", "--cases", str(suite), "--out", "now", "--no-progress")
    assert ran.returncode == 0, ran.stderr
    gated = evalctl(tmp_path, "compare", "b.json", "now")
    assert gated.returncode == 1, gated.stdout + gated.stderr
    assert "hello: exact" in gated.stdout


def test_a_case_its_kind_drove_records_it_and_the_gate_reads_that(tmp_path: Path) -> None:
    # The kind's drive() is recorded on the result (`driven_by`), and the exact rule reads
    # that fact: a retrieval case is exact even where `deterministic` is not set.
    example = tmp_path / "example"
    shutil.copytree(RETRIEVAL, example)
    ran = evalctl(tmp_path, "run", "--provider", "scripted", "--cases", str(example),
                  "--out", "now", "--no-progress")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    run = read_run(tmp_path / "now" / "results.json")
    assert run.cases and all(c.driven_by == "tools" and c.deterministic for c in run.cases)
    case = run.cases[0].model_copy(update={"deterministic": False})
    assert exact_case(case, run)
    asked = case.model_copy(update={"driven_by": "model", "tool_calls": []})
    assert not exact_case(asked, run)
