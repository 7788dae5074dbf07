"""A provider that answers each request with its last user message, as sent.

promptfoo's `echo`, Inspect's `mockllm` for prompts: `--provider echo` shows what a case's
template, a data-file row and a matrix prompt variant made of the prompt, and runs every
check against it, with no model and no script. It calls no tools; a request with a JSON
schema gets the same text back (checks on the answer's shape then say what they would).
It judges nothing: a judge that falls back to it is an error saying to name one.
"""

from __future__ import annotations

from evalctl.chat import CompletionRequest, CompletionResponse, Role, Usage
from evalctl.errors import ProviderError
from evalctl.providers.base import CHAT, Provider
from evalctl.providers.options import ProviderOptions


def last_user_message(request: CompletionRequest) -> str:
    """The content of the request's last user message ("" when it has none)."""
    return next((m.content for m in reversed(request.messages) if m.role is Role.USER), "")


class EchoProvider(Provider):
    name = "echo"
    summary = (
        "answers each request with its last user message as sent, no tools (checks "
        "templates and prompt variants)"
    )
    # It accepts every request a chat provider does, so no suite is skipped on it.
    capabilities = CHAT
    concurrent = True
    real = False

    def __init__(self, model: str = "echo"):
        self._model = model

    @property
    def model(self) -> str:
        return self._model

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        if "#" in request.tag:
            # A case's side request (its judge, `suite/id#judge`) would get its own question
            # back, never a verdict: say what to do instead of a malformed verdict.
            raise ProviderError(
                f"echo cannot answer a side request ({request.tag.partition('#')[2]}): it "
                "returns the prompt; name the judge's provider ([judge] provider in "
                "evalctl.toml, or the assertion's own provider)"
            )
        content = last_user_message(request)
        words = sum(len(m.content.split()) for m in request.messages)
        return CompletionResponse(
            content=content,
            stop_reason="end_turn",
            usage=Usage(input_tokens=words, output_tokens=len(content.split())),
            model=self.model,
        )

    def close(self) -> None:
        pass


def create(options: ProviderOptions) -> EchoProvider:
    # `--model` names the cell in a matrix; the answers are the same.
    return EchoProvider(options.model or "echo")
