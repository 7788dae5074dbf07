"""An `assert` suite with `output_schema` on the embedded model: the local provider turns the
schema into a grammar, so every answer is schema-valid, however good or bad its content."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evalctl.config import Settings
from evalctl.providers.local import LocalProvider
from evalctl.runner.api import RunRequest
from evalctl.runner.execute import execute_run
from tests.local_helpers import make_provider

SUITE = """
[suite]
name = "tickets"
kind = "assert"
max_turns = 1
max_tokens = 96
system_prompt = "Classify the support message. Answer with JSON: category, urgent, summary."
output_schema.type = "object"
output_schema.required = ["category", "urgent", "summary"]
output_schema.additionalProperties = false
output_schema.properties.category = { enum = ["billing", "shipping", "spam", "other"] }
output_schema.properties.urgent = { type = "boolean" }
output_schema.properties.summary = { type = "string", maxLength = 60 }

[[case]]
id = "charged-twice"
input = { prompt = "I was charged twice for my order this morning, please fix it now!" }
[[case.assert]]
type = "json-field"
path = "category"
equals = "billing"

[[case]]
id = "late-parcel"
input = { messages = [{ role = "user", content = "My parcel is a week late. Where is it?" }] }
[[case.assert]]
type = "json-field"
path = "category"
one_of = ["shipping", "other"]

[[case]]
id = "prize"
input = { prompt = "You won a free cruise! Reply with your bank details to claim." }
[[case.assert]]
type = "json-field"
path = "category"
equals = "spam"
[[case.assert]]
type = "json-field"
path = "urgent"
equals = false
"""


@pytest.fixture
def local() -> Iterator[LocalProvider]:
    provider = make_provider()
    yield provider
    provider.stop_daemon(grace_s=2)
    provider.close()


@pytest.mark.model
def test_every_answer_matches_the_output_schema(local: LocalProvider, tmp_path: Path) -> None:
    suite = tmp_path / "tickets.toml"
    suite.write_text(SUITE)
    request = RunRequest(
        paths=[suite], out_dir=tmp_path / "out", show_progress=False, timeout_s=300
    )
    result = execute_run(request, Settings(), {}, provider_override=local).result
    assert [c.id for c in result.cases] == ["charged-twice", "late-parcel", "prize"]
    for case in result.cases:
        assert case.status in ("pass", "fail"), case.error  # scored, whatever the model knows
        schema = next(c for c in case.checks if c.name == "output_schema")
        assert schema.status == "pass", (case.id, case.output, schema.message)
