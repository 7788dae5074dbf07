"""A matrix's prompt variant: a template wrapping each case's prompt (`{{ prompt }}`).

The variant is applied to the conversation a case opens with, so the transcript records the
prompt as sent; the last user message of that opening is the case's prompt (a kind may open
with earlier turns, which stay as they are).
"""

from __future__ import annotations

from evalctl.cases.template import Renderer
from evalctl.chat import Message, Role

# Stands for a case's prompt when a template is checked before any case runs.
_PROBE = "\x00evalctl-case-prompt\x00"


def template_problem(template: str) -> str | None:
    """Why `template` cannot wrap a prompt, or None: a syntax error, a placeholder other than
    `prompt`, or no `{{ prompt }}` at all (the case would never be asked)."""
    rendered, problems = Renderer().render(template, {"prompt": _PROBE})
    if problems:
        return problems[0][1]
    if _PROBE not in rendered:
        return "the template never includes the case's prompt: add {{ prompt }}"
    return None


def wrap_prompt(messages: list[Message], template: str | None) -> list[Message]:
    """`messages` with the last user message rendered into `template` (None: unchanged)."""
    if template is None:
        return messages
    last = max((i for i, m in enumerate(messages) if m.role is Role.USER), default=None)
    if last is None:
        return messages
    rendered, _ = Renderer().render(template, {"prompt": messages[last].content})
    wrapped = messages[last].model_copy(update={"content": str(rendered)})
    return [*messages[:last], wrapped, *messages[last + 1 :]]
