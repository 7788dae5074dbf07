"""The `assert` suite of issue 11, verbatim, and helpers to lay it out in a directory."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_helpers import evalctl as evalctl  # the suites' tests import it from here

# Exactly as the issue writes it: it must validate and run as is.
ISSUE_EXAMPLE = """\
[suite]
name = "capitals"
kind = "assert"
system_prompt = "Answer with JSON only."
max_turns = 3
tools = ["weather"]                       # declared below, or provided by a plugin
# Optional. The answer must be JSON matching this schema. The local provider constrains
# decoding to it; cloud providers use their structured-output modes.
output_schema = { type = "object", properties = { city = { type = "string" } }, required = ["city"] }

[[suite.tool]]
name = "weather"
description = "Current weather for a city"
parameters = { type = "object", properties = { city = { type = "string" } }, required = ["city"] }
fixture = "fixtures/weather.json"   # a JSON object keyed by the value of `key`
key = "city"                        # an unknown value returns a tool error to the model
# or: command = ["python3", "tools/weather.py"]  arguments as JSON on stdin, result JSON on stdout, with a timeout
# or: python = "mytools.weather:lookup"          resolved from the suite's directory, then sys.path

[[case]]
id = "france"
input = { prompt = "What is the capital of France, and what is the weather there?" }   # or messages = [...]
[[case.assert]]
type = "json-field"
path = "city"              # a dotted path; with one of: equals, one_of, regex, min, max
equals = "Paris"
[[case.assert]]
type = "tool-called"
name = "weather"
args = { city = "Paris" }  # a subset of the arguments, values compared exactly
"""

WEATHER = {"Paris": {"temp_c": 18, "sky": "cloudy"}, "Rome": {"temp_c": 24, "sky": "sunny"}}

ISSUE_REPLIES = """\
[[cases."capitals/france"]]
tool_calls = [{ name = "weather", arguments = { city = "Paris" } }]

[[cases."capitals/france"]]
content = '{"city": "Paris"}'
"""


def write_issue_suite(root: Path) -> Path:
    """The example and its fixture under `root/suite/`; returns the suite file."""
    suite_dir = root / "suite"
    (suite_dir / "fixtures").mkdir(parents=True)
    (suite_dir / "fixtures" / "weather.json").write_text(json.dumps(WEATHER))
    path = suite_dir / "capitals.toml"
    path.write_text(ISSUE_EXAMPLE)
    return path
