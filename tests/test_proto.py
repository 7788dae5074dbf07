"""The proto contract: committed generated code is fresh, and chat types round-trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalctl.chat import (
    CompletionRequest,
    CompletionResponse,
    Message,
    Role,
    Timings,
    ToolCall,
    ToolDef,
    ToolResult,
    Usage,
)
from evalctl.server import convert, protogen
from evalctl.server.gen import inference_pb2 as pb


def test_committed_generated_code_is_not_stale(tmp_path: Path) -> None:
    written = protogen.generate(tmp_path)
    for fresh in written:
        committed = protogen.GEN_DIR / fresh.name
        assert committed.is_file(), f"{committed} is missing: run `make proto`"
        assert committed.read_text() == fresh.read_text(), (
            f"{committed} is stale: run `make proto` and commit the result"
        )


def test_service_has_the_four_unary_rpcs() -> None:
    service = pb.DESCRIPTOR.services_by_name["InferenceService"]
    methods = {m.name: m for m in service.methods}
    assert set(methods) == {"Complete", "Embed", "GetStatus", "Shutdown"}
    assert not any(m.server_streaming or m.client_streaming for m in methods.values())


def _wire(message: object) -> object:
    """Through bytes, as on the socket."""
    return type(message).FromString(message.SerializeToString())  # type: ignore[attr-defined]


def test_request_round_trips_including_tool_results() -> None:
    call = ToolCall(id="call_0", name="lookup", arguments={"q": "stern", "n": 2})
    request = CompletionRequest(
        messages=[
            Message.system("be brief"),
            Message.user("find stern"),
            Message(role=Role.ASSISTANT, content="", tool_calls=[call]),
            Message.tool_result(
                ToolResult(tool_call_id="call_0", name="lookup", content="not found", is_error=True)
            ),
        ],
        tools=[ToolDef(name="lookup", description="look up", parameters={"type": "object"})],
        tool_choice="lookup",
        json_schema={"type": "object", "properties": {"a": {"type": "integer"}}},
        temperature=0.5,
        max_tokens=77,
        seed=0,
        tag="suite/case",
    )
    wire = _wire(convert.request_to_pb(request, timeout_s=12.5))
    assert wire.timeout_s == 12.5  # type: ignore[attr-defined]
    assert wire.messages[3].role == pb.ROLE_TOOL  # type: ignore[attr-defined]
    back = convert.request_from_pb(wire, default_max_tokens=512)
    assert back == request


def test_absent_seed_and_schema_stay_absent() -> None:
    request = CompletionRequest(messages=[Message.user("hi")], seed=None)
    back = convert.request_from_pb(
        _wire(convert.request_to_pb(request, timeout_s=1)), default_max_tokens=512
    )
    assert back.seed is None
    assert back.json_schema is None
    assert back.tool_choice == "auto"


def test_response_round_trips() -> None:
    response = CompletionResponse(
        content="",
        tool_calls=[ToolCall(id="call_1", name="submit", arguments={"x": [1, "two"]})],
        stop_reason="tool_use",
        usage=Usage(input_tokens=10, output_tokens=5),
        timings=Timings(ttft_ms=12.0, total_ms=30.0, tokens_per_s=40.0),
        model="m",
    )
    assert convert.response_from_pb(_wire(convert.response_to_pb(response))) == response
    bare = CompletionResponse(stop_reason="timeout", model="m")
    assert convert.response_from_pb(_wire(convert.response_to_pb(bare))) == bare


def test_malformed_json_fields_are_conversion_errors() -> None:
    wire = pb.CompleteRequest(
        messages=[pb.Message(role=pb.ROLE_USER, content="x")], json_schema="{not json"
    )
    with pytest.raises(convert.ConversionError, match="json_schema"):
        convert.request_from_pb(wire, default_max_tokens=1)
    no_role = pb.CompleteRequest(messages=[pb.Message(content="x")])
    with pytest.raises(convert.ConversionError, match="role"):
        convert.request_from_pb(no_role, default_max_tokens=1)
