"""`[suite] tool_choice` on the `assert` kind: `auto` (the default), `none`, `required` or a
tool's name reaches the provider's requests. A forced choice holds for the first turn only;
a name the suite does not offer, or the key on a kind that does not read it, is refused
naming the file and the field."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evalctl.cases.loader import load_suite
from evalctl.config import Settings
from evalctl.errors import BadInputError
from evalctl.providers.local import LocalProvider
from evalctl.providers.scripted import ScriptedProvider, load_script
from evalctl.results.models import CaseResult
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from tests.local_helpers import make_provider

SUITE = """
[suite]
name = "desk"
kind = "assert"
max_turns = 3
tools = ["create_ticket", "get_time"]
{choice}

[[suite.tool]]
name = "create_ticket"
description = "Files a support ticket about a problem"
parameters = {{ type = "object", properties = {{ title = {{ type = "string" }} }} }}
mock = {{ id = "T-1" }}

[[suite.tool]]
name = "get_time"
description = "The current time"
mock = "12:00"

[[case]]
id = "greet"
input = {{ prompt = "Say hello." }}
[[case.assert]]
type = "contains"
value = "hello"
"""

REPLIES = """
[[cases."desk/greet"]]
tool_calls = [{ name = "get_time" }]

[[cases."desk/greet"]]
content = "hello"
"""


def write_suite(tmp_path: Path, choice: str) -> Path:
    path = tmp_path / "desk.toml"
    path.write_text(SUITE.format(choice=choice))
    return path


def sent_choices(tmp_path: Path, choice: str) -> tuple[list[str], CaseResult]:
    """The `tool_choice` of every request the provider got, in order, and the case."""
    script = tmp_path / "replies.toml"
    script.write_text(REPLIES)
    provider = ScriptedProvider(load_script(script))
    request = RunRequest(
        paths=[write_suite(tmp_path, choice)], out_dir=tmp_path / "out", show_progress=False
    )
    (case,) = execute_run(request, Settings(), {}, provider_override=provider).result.cases
    return [str(r.tool_choice) for r in provider.calls], case


@pytest.mark.parametrize(
    ("choice", "sent"),
    [
        ("", ["auto", "auto"]),
        ('tool_choice = "auto"', ["auto", "auto"]),
        ('tool_choice = "none"', ["none", "none"]),
        # Forced on the first turn only: afterwards the model must be free to answer.
        ('tool_choice = "required"', ["required", "auto"]),
        ('tool_choice = "create_ticket"', ["create_ticket", "auto"]),
    ],
)
def test_each_request_carries_the_suites_choice(
    tmp_path: Path, choice: str, sent: list[str]
) -> None:
    got, case = sent_choices(tmp_path, choice)
    assert got == sent
    # The transcript in the results says what each turn was sent.
    assert [t.tool_choice for t in case.transcript] == sent
    assert case.status == "pass", case.checks


def test_a_choice_that_is_no_tool_of_the_suite_is_refused_naming_the_field(
    tmp_path: Path,
) -> None:
    path = write_suite(tmp_path, 'tool_choice = "create_tickets"')
    with pytest.raises(BadInputError) as info:
        load_suite(path)
    assert (info.value.file, info.value.field) == (str(path), "suite.tool_choice")
    assert "'create_tickets' is not one of the suite's tools (create_ticket, get_time)" in (
        info.value.message
    )


def test_a_forced_choice_needs_a_tool_to_call(tmp_path: Path) -> None:
    path = tmp_path / "bare.toml"
    path.write_text(
        '[suite]\nname = "bare"\nkind = "assert"\ntool_choice = "required"\n'
        '[[case]]\nid = "a"\ninput = { prompt = "hi" }\n'
        '[[case.assert]]\ntype = "contains"\nvalue = "hi"\n'
    )
    with pytest.raises(BadInputError) as info:
        load_suite(path)
    assert info.value.field == "suite.tool_choice"
    assert "'required' needs a tool to call, and suite.tools is empty" in info.value.message


def test_a_kind_that_sets_its_own_choice_refuses_the_key(echo_suite: Path) -> None:
    echo_suite.write_text(
        echo_suite.read_text().replace(
            'tools = ["upper"]', 'tools = ["upper"]\ntool_choice = "upper"'
        )
    )
    with pytest.raises(BadInputError) as info:
        load_suite(echo_suite)
    assert info.value.field == "suite.tool_choice"
    assert "kind 'echo' sets its own tool choice" in info.value.message


@pytest.fixture
def local() -> Iterator[LocalProvider]:
    provider = make_provider()
    yield provider
    provider.stop_daemon(grace_s=2)
    provider.close()


@pytest.mark.model
def test_a_tool_name_makes_the_local_models_first_reply_a_call_to_it(
    local: LocalProvider, tmp_path: Path
) -> None:
    # "Say hello." needs no tool, and the suite offers two: only the choice explains a call
    # to create_ticket.
    path = write_suite(tmp_path, 'tool_choice = "create_ticket"\nmax_tokens = 64')
    request = RunRequest(paths=[path], out_dir=tmp_path / "out", show_progress=False, timeout_s=300)
    (case,) = execute_run(request, Settings(), {}, provider_override=local).result.cases
    first = case.transcript[0]
    assert first.tool_choice == "create_ticket"
    assert first.reply is not None, case.error
    assert [c.name for c in first.reply.tool_calls] == ["create_ticket"]
    assert case.tool_calls[0].name == "create_ticket"
    assert case.transcript[1].tool_choice == "auto"
