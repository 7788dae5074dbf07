"""What the judge is asked, and how its reply becomes a verdict.

The reply must be a JSON document in one fixed schema, `{reason, verdict}`: the reason comes
first so the model argues before it decides, and it is bounded (`maxLength`) so a local model
under a grammar cannot run away inside it. Providers that support it constrain decoding to
the schema (the local provider through a grammar, cloud providers through their structured
outputs); the reply is still validated here, since not every endpoint enforces it.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from evalctl.chat import CompletionRequest, Message

# Part of every cache key: a change to what the judge is asked invalidates old verdicts.
PROMPT_VERSION = 1
REASON_MAX_CHARS = 300
# Room for the reason at its longest plus the JSON around it.
MAX_TOKENS = 400

Verdict = Literal["pass", "fail"]

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": REASON_MAX_CHARS},
        "verdict": {"type": "string", "enum": ["pass", "fail"]},
    },
    "required": ["reason", "verdict"],
    "additionalProperties": False,
}

SYSTEM_PROMPT = (
    "You are a strict grader. You are given the input an AI assistant received, the answer "
    "it gave, and a rubric. Decide whether the answer meets the rubric. Judge only against "
    "the rubric, not your own preferences. Reply with only a JSON object: "
    '{"reason": "<one or two sentences>", "verdict": "pass" or "fail"}.'
)


def judge_request(rubric: str, case_input: str, answer: str, *, tag: str) -> CompletionRequest:
    user = (
        f"<input>\n{case_input}\n</input>\n\n"
        f"<answer>\n{answer}\n</answer>\n\n"
        f"<rubric>\n{rubric}\n</rubric>\n\n"
        "Does the answer meet the rubric?"
    )
    return CompletionRequest(
        messages=[Message.system(SYSTEM_PROMPT), Message.user(user)],
        json_schema=VERDICT_SCHEMA,
        temperature=0.0,
        max_tokens=MAX_TOKENS,
        tag=tag,
    )


def parse_verdict(reply: str) -> tuple[Verdict | None, str]:
    """(verdict, reason) from the judge's reply, or (None, why the reply is no verdict)."""
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
        return None, "the judge's reply is not a JSON object"
    verdict, reason = value.get("verdict"), value.get("reason")
    if verdict not in ("pass", "fail"):
        return None, f"the judge's verdict is {verdict!r}, not 'pass' or 'fail'"
    if not isinstance(reason, str):
        return None, "the judge gave no reason"
    return verdict, reason.strip()
