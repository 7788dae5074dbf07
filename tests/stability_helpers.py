"""Shared pieces for the stability tests: a short suite of the test-only `echo` kind, for
real-model runs that must stay quick on 2 shared cores (one llama thread, short answers)."""

from __future__ import annotations

from pathlib import Path

import pytest

SHORT_SUITE = """
[suite]
name = "short"
kind = "echo"
system_prompt = "Answer in a few words."
max_turns = 1
max_tokens = 16

[[case]]
id = "colour"
input = { prompt = "Name a colour." }
expected = { answer = "unused" }

[[case]]
id = "animal"
input = { prompt = "Name an animal." }
expected = { answer = "unused" }

[[case]]
id = "city"
input = { prompt = "Name a city." }
expected = { answer = "unused" }
"""


@pytest.fixture
def short_suite(echo_suite: Path) -> Path:
    """Three single-turn cases, no tools, 16 tokens at most (the echo kind is registered)."""
    echo_suite.write_text(SHORT_SUITE)
    return echo_suite


@pytest.fixture
def one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # llama.cpp threads busy-wait; on 2 shared cores one thread is the fastest and fairest.
    monkeypatch.setenv("EVALCTL_LOCAL_THREADS", "1")
