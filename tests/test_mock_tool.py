"""`mock = ...` on a `[[suite.tool]]`: a record-only tool with no backend. Every call returns
the mock value, the spy records it as it records any tool, arguments are still checked
against `parameters`, and a mock beside a backend is refused, located."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalctl.cases.loader import load_suite
from evalctl.config import Settings
from evalctl.errors import BadInputError
from evalctl.providers.scripted import ScriptedProvider, load_script
from evalctl.results.models import CaseResult
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run

SUITE = """
[suite]
name = "helpdesk"
kind = "assert"
max_turns = 3
tools = ["create_ticket"]

[[suite.tool]]
name = "create_ticket"
description = "Files a support ticket"
parameters.type = "object"
parameters.properties.title = { type = "string" }
parameters.properties.priority = { enum = ["low", "high"] }
parameters.required = ["title"]
mock = { id = "T-1", ok = true }

[[case]]
id = "printer"
input = { prompt = "My printer is on fire. File a ticket." }
[[case.assert]]
type = "tool-called"
name = "create_ticket"
args_match = { title = "(?i)printer" }
[[case.assert]]
type = "contains"
value = "T-1"
"""

REPLIES = """
[[cases."helpdesk/printer"]]
tool_calls = [
  { name = "create_ticket", arguments = { title = "Printer on fire", priority = "urgent" } },
  { name = "create_ticket", arguments = { title = "Printer on fire", priority = "high" } },
]

[[cases."helpdesk/printer"]]
content = "Filed as T-1."
"""


def run_suite(tmp_path: Path, suite: str, replies: str, *, tools_exec: bool = True) -> CaseResult:
    path = tmp_path / "helpdesk.toml"
    path.write_text(suite)
    script = tmp_path / "replies.toml"
    script.write_text(replies)
    provider = ScriptedProvider(load_script(script))
    request = RunRequest(
        paths=[path], out_dir=tmp_path / "out", show_progress=False, tools_exec=tools_exec
    )
    (case,) = execute_run(request, Settings(), {}, provider_override=provider).result.cases
    return case


def test_a_suite_whose_only_tool_is_a_mock_runs_and_records_each_call(tmp_path: Path) -> None:
    case = run_suite(tmp_path, SUITE, REPLIES)
    assert case.status == "pass", case.checks
    refused, filed = case.tool_calls
    # Arguments are checked against `parameters` first: the mock does not answer a bad call.
    assert refused.is_error and refused.invalid_arguments
    assert "priority: 'urgent' is not one of ['low', 'high']" in refused.result
    assert (filed.is_error, filed.arguments) == (
        False,
        {"title": "Printer on fire", "priority": "high"},
    )
    assert json.loads(filed.result) == {"id": "T-1", "ok": True}
    assert filed.data == {"value": {"id": "T-1", "ok": True}}
    # The model read the mock back: the transcript's second turn sent it as the tool result.
    second = case.transcript[1]
    sent = [m.content for m in second.sent if m.role.value == "tool"]
    assert sent[1] == '{"id": "T-1", "ok": true}'


def test_a_mock_runs_no_code_so_no_tools_exec_allows_it(tmp_path: Path) -> None:
    assert run_suite(tmp_path, SUITE, REPLIES, tools_exec=False).status == "pass"


@pytest.mark.parametrize("mock", ["false", "0", '""', "[]", '"queued"'])
def test_any_toml_value_is_a_mock_even_a_falsy_one(tmp_path: Path, mock: str) -> None:
    suite = SUITE.replace('mock = { id = "T-1", ok = true }', f"mock = {mock}")
    case = run_suite(tmp_path, suite, REPLIES)
    assert case.tool_calls[1].result == json.dumps(json.loads(mock))
    assert case.tool_calls[1].data == {"value": json.loads(mock)}


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ('fixture = "f.json"\nkey = "title"', "exactly one of fixture, command, python, mock "
         "(found: fixture, mock)"),
        ('command = ["true"]', "(found: command, mock)"),
        ('python = "m:f"', "(found: python, mock)"),
        ('env = ["HOME"]', "`env` applies only to a command or python tool"),
    ],
)  # fmt: skip
def test_a_mock_beside_a_backend_or_env_is_refused_naming_the_tool(
    tmp_path: Path, extra: str, needle: str
) -> None:
    path = tmp_path / "helpdesk.toml"
    path.write_text(SUITE.replace("mock = {", f"{extra}\nmock = {{"))
    with pytest.raises(BadInputError) as info:
        load_suite(path)
    assert info.value.field == "suite.tool[1]"
    assert needle in info.value.message
    assert info.value.file == str(path)


def test_a_mock_with_no_json_form_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "helpdesk.toml"
    path.write_text(SUITE.replace('mock = { id = "T-1", ok = true }', "mock = 2026-11-25"))
    with pytest.raises(BadInputError) as info:
        load_suite(path)
    assert info.value.field == "suite.tool[1]"
    assert "`mock` must be a JSON value" in info.value.message


def test_no_backend_at_all_names_mock_among_the_choices(tmp_path: Path) -> None:
    path = tmp_path / "helpdesk.toml"
    path.write_text(SUITE.replace('mock = { id = "T-1", ok = true }', ""))
    with pytest.raises(BadInputError) as info:
        load_suite(path)
    assert "exactly one of fixture, command, python, mock (found: none)" in info.value.message


SHORTHAND = """
[suite]
name = "helpdesk"
kind = "assert"

[[suite.tools]]
name = "create_ticket"
description = "Files a support ticket"
parameters = { type = "object", properties = { title = { type = "string" } } }
mock = { id = "T-1", ok = true }

[[case]]
id = "printer"
input = { prompt = "My printer is on fire. File a ticket." }
[[case.assert]]
type = "tool-called"
name = "create_ticket"
args_match = { title = "(?i)printer" }
"""


def test_suite_tools_tables_declare_and_offer_a_tool_in_one(tmp_path: Path) -> None:
    replies = REPLIES.replace('priority = "urgent"', 'priority = "high"')
    case = run_suite(tmp_path, SHORTHAND, replies)
    assert case.status == "pass", case.checks
    assert [json.loads(c.result) for c in case.tool_calls] == [{"id": "T-1", "ok": True}] * 2


def test_a_suite_tools_table_is_checked_as_a_declaration(tmp_path: Path) -> None:
    path = tmp_path / "helpdesk.toml"
    path.write_text(SHORTHAND.replace('name = "create_ticket"\ndesc', "desc", 1))
    with pytest.raises(BadInputError) as info:
        load_suite(path)
    # One problem, said once: not also as a name missing from `tools`.
    assert info.value.field == "suite.tool[1].name"
    assert str(info.value).count("\n") == 0
    assert info.value.message.endswith("required key is missing")
