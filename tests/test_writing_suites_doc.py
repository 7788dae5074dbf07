"""docs/writing-suites.md stays true: its plugin example registers a working assertion
type, and the suite it walks through is the one in examples/support."""

from __future__ import annotations

import json
from pathlib import Path

from tests.assert_helpers import evalctl
from tests.conftest import REPO

DOC = (REPO / "docs" / "writing-suites.md").read_text()

SUITE = """
[suite]
name = "brief"
kind = "assert"
system_prompt = "Be brief."

[[case]]
id = "hello"
input = { prompt = "Say hello." }
[[case.assert]]
type = "max-words"
max = 3
name = "short"
[[case.assert]]
type = "icontains"
value = "hello"

[[case]]
id = "rambling"
input = { prompt = "Say hello." }
[[case.assert]]
type = "max-words"
max = 3
"""

REPLIES = """
[[cases.hello]]
content = "Hello there!"

[[cases.rambling]]
content = "Well hello there, how very nice to see you today"
"""


def doc_block(label: str) -> str:
    """The fenced block that follows the first line containing `label`."""
    start = DOC.index(label)
    fence = DOC.index("```", start)
    body = DOC.index("\n", fence) + 1
    return DOC[body : DOC.index("```", body)]


def test_the_plugin_example_adds_a_working_assertion_type(tmp_path: Path) -> None:
    (tmp_path / "evalctl.toml").write_text(doc_block("`evalctl.toml` in your project directory"))
    (tmp_path / "mychecks.py").write_text(doc_block("`mychecks.py` beside it"))
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "brief.toml").write_text(SUITE)
    (tmp_path / "replies.toml").write_text(REPLIES)

    ran = evalctl(tmp_path, "run", "--provider", "scripted", "--script", "replies.toml",
                  "--out", "out")  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    cases = {c["id"]: c for c in json.loads((tmp_path / "out/results.json").read_text())["cases"]}
    assert cases["hello"]["status"] == "pass"
    assert [c["name"] for c in cases["hello"]["checks"]] == ["short", "icontains:hello"]
    (check,) = cases["rambling"]["checks"]
    assert (check["name"], check["status"], check["actual"]) == ("max-words", "fail", 10)
    assert check["message"] == "10 words, over 3"

    # Its parameters are validated like a built-in type's.
    (tmp_path / "cases" / "brief.toml").write_text(SUITE.replace("max = 3\nname", "maxx = 3\nname"))
    checked = evalctl(tmp_path, "cases", "validate")
    assert checked.returncode == 2
    assert "case 'hello': field 'case.assert[1].maxx': unknown key" in checked.stderr


def test_the_walked_through_suite_is_the_example_on_disk() -> None:
    example = (REPO / "examples" / "support" / "support.toml").read_text().splitlines()
    shown = doc_block("The suite's head declares") + doc_block("and each case says what must")
    for line in shown.splitlines():
        code = line.split("#", 1)[0].rstrip() if "# " in line else line
        if code and not code.startswith("# ..."):
            assert any(code in ex for ex in example), line
