"""The issue's `assert` suite on a cloud provider (the real Anthropic SDK against the fake
server): its declared tool is offered and called, and `output_schema` goes out as the API's
structured-output format."""

from __future__ import annotations

import random
from pathlib import Path

from evalctl.config import Settings
from evalctl.fakes.llm_server import FakeLLMServer, RecordedRequest, Step
from evalctl.retry import RetryPolicy
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from tests.assert_helpers import write_issue_suite
from tests.cloud_helpers import ANTHROPIC_KEY


def responder(req: RecordedRequest) -> Step:
    if req.assistant_turns() == 0:
        return Step.tool("weather", {"city": "Paris"})
    return Step.reply('{"city": "Paris"}')


def test_the_issue_suite_on_anthropic_sends_its_schema_and_tool(tmp_path: Path) -> None:
    suite = write_issue_suite(tmp_path)
    with FakeLLMServer(responder=responder) as server:
        request = RunRequest(
            provider="anthropic",
            model="claude-test",
            paths=[suite],
            out_dir=tmp_path / "out",
            show_progress=False,
        )
        env = server.env(anthropic_key=ANTHROPIC_KEY)
        retry = RetryPolicy(max_attempts=1, sleep=lambda _s: None, rng=random.Random(0))
        result = execute_run(request, Settings(), env, retry=retry).result
        bodies = [r.body for r in server.requests]
    (case,) = result.cases
    assert case.status == "pass", case.checks
    assert case.tool_calls[0].data["value"] == {"temp_c": 18, "sky": "cloudy"}
    assert len(bodies) == 2
    for body in bodies:
        assert [t["name"] for t in body["tools"]] == ["weather"]
        schema = body["output_config"]["format"]["schema"]
        assert body["output_config"]["format"]["type"] == "json_schema"
        assert schema["properties"] == {"city": {"type": "string"}}
        assert schema["required"] == ["city"]
