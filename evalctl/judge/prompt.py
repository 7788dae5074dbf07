"""What the judge is asked, and how its reply becomes a verdict (and, graded, a score).

The reply must be a JSON document in one fixed schema, `{reason, verdict}` with an optional
`score` from 0 to 1: the reason comes first so the model argues before it decides, and it is
bounded (`maxLength`) so a local model under a grammar cannot run away inside it. Providers
that support it constrain decoding to the schema (the local provider through a grammar, cloud
providers through their structured outputs); the reply is still validated here, since not
every endpoint enforces it.

Two modes. Pass/fail (the default) reads the verdict. Graded (the assertion has a
`threshold`) asks for a score as well, under a schema where `score` is required, and a reply
without one is no judgement. The threshold itself is never shown to the judge: it scores
against the rubric alone, so one stored score serves any threshold.

Requests are tagged `<suite>/<id>#judge`, or `<suite>/<id>#judge:<check name>` for a judge
assertion of a case; the scripted provider's script tells them apart by it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Literal

from evalctl.chat import CompletionRequest, Message

# Part of every cache key: a change to what the judge is asked invalidates old verdicts.
PROMPT_VERSION = 1
REASON_MAX_CHARS = 300
# Room for the reason at its longest plus the JSON around it.
MAX_TOKENS = 400

JUDGE_TAG_SUFFIX = "#judge"

Verdict = Literal["pass", "fail"]

# `score` sits between the reason and the verdict: a grammar emits properties in this order,
# so a graded judge argues, scores, then decides.
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": REASON_MAX_CHARS},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "verdict": {"type": "string", "enum": ["pass", "fail"]},
    },
    "required": ["reason", "verdict"],
    "additionalProperties": False,
}

# What a graded judge is held to: the same schema with the score required, so a judge under
# a grammar or structured outputs cannot leave it out.
GRADED_SCHEMA: dict[str, Any] = {**VERDICT_SCHEMA, "required": ["reason", "score", "verdict"]}

SYSTEM_PROMPT = (
    "You are a strict grader. You are given the input an AI assistant received, the answer "
    "it gave, and a rubric. Decide whether the answer meets the rubric. Judge only against "
    "the rubric, not your own preferences. Reply with only a JSON object: "
    '{"reason": "<one or two sentences>", "verdict": "pass" or "fail"}.'
)

GRADED_SYSTEM_PROMPT = (
    "You are a strict grader. You are given the input an AI assistant received, the answer "
    "it gave, and a rubric. Score how well the answer meets the rubric, from 0 (not at all) "
    "to 1 (fully), and decide whether it meets it. Judge only against the rubric, not your "
    "own preferences. Reply with only a JSON object: "
    '{"reason": "<one or two sentences>", "score": <a number from 0 to 1>, '
    '"verdict": "pass" or "fail"}.'
)


def judge_tag(case_key: str, check_name: str | None = None) -> str:
    """The tag of a judge request: the case key, `#judge`, and the check's name if any."""
    tag = case_key + JUDGE_TAG_SUFFIX
    return f"{tag}:{check_name}" if check_name else tag


def judge_request(
    rubric: str, case_input: str, answer: str, *, tag: str, graded: bool = False
) -> CompletionRequest:
    question = (
        "How well does the answer meet the rubric?"
        if graded
        else "Does the answer meet the rubric?"
    )
    user = (
        f"<input>\n{case_input}\n</input>\n\n"
        f"<answer>\n{answer}\n</answer>\n\n"
        f"<rubric>\n{rubric}\n</rubric>\n\n"
        f"{question}"
    )
    return CompletionRequest(
        messages=[
            Message.system(GRADED_SYSTEM_PROMPT if graded else SYSTEM_PROMPT),
            Message.user(user),
        ],
        json_schema=GRADED_SCHEMA if graded else VERDICT_SCHEMA,
        temperature=0.0,
        max_tokens=MAX_TOKENS,
        tag=tag,
        # Under the schema's grammar every part of the reply is bounded (the reason by
        # maxLength, a number's digits and the whitespace by the grammar), so it always ends
        # inside MAX_TOKENS as a whole verdict. The local engine's loop guard would instead
        # cut a small model that repeats itself inside the reason (or a score's digits) off
        # mid-JSON: a malformed verdict. So a judge's reply runs on to its schema's end.
        allow_repetition=True,
    )


@dataclass(frozen=True)
class Reading:
    """A judge's reply read: its verdict, its reason, and its score (graded mode only)."""

    verdict: Verdict
    reason: str
    score: float | None = None


def read_reply(reply: str, *, graded: bool = False) -> Reading | str:
    """The reply as a `Reading`, or why it is none (a string). Graded, the score is required
    and must be a number from 0 to 1; pass/fail, a score is not read."""
    text = reply.strip()
    start, end = text.find("{"), text.rfind("}")
    value: Any = None
    for candidate in (text, text[start : end + 1] if 0 <= start < end else ""):
        try:
            value = json.loads(candidate)
            break
        except json.JSONDecodeError:
            continue
    if not isinstance(value, dict):
        return "the judge's reply is not a JSON object"
    verdict, reason = value.get("verdict"), value.get("reason")
    if verdict not in ("pass", "fail"):
        return f"the judge's verdict is {verdict!r}, not 'pass' or 'fail'"
    if not isinstance(reason, str):
        return "the judge gave no reason"
    if not graded:
        return Reading(verdict, reason.strip())
    if "score" not in value:
        return "the judge gave no score (an assertion with a threshold needs one, from 0 to 1)"
    score = value["score"]
    # bool is an int to Python, and `true` is no score.
    if isinstance(score, bool) or not isinstance(score, int | float) or not math.isfinite(score):
        return f"the judge's score is {score!r}, not a number from 0 to 1"
    if not 0 <= score <= 1:
        return f"the judge's score is {score!r}, outside 0 to 1"
    return Reading(verdict, reason.strip(), float(score))


def parse_verdict(reply: str) -> tuple[Verdict | None, str]:
    """(verdict, reason) from a pass/fail judge's reply, or (None, why it is no verdict)."""
    reading = read_reply(reply)
    if isinstance(reading, str):
        return None, reading
    return reading.verdict, reading.reason
