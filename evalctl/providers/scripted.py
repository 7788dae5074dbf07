"""A provider that replays canned replies from a script file, keyed by case.

For tests and demos: the whole pipeline runs deterministically without a model.
Script format (TOML or JSON): a table of case keys (`suite/id`, or a bare `id`) to a list
of replies, one per turn, plus an optional `default` list used for any other case::

    [[cases."release-assets/stern"]]
    tool_calls = [{ name = "extract_pattern", arguments = { action = "github_archive" } }]

    [[cases."release-assets/stern"]]
    content = "Done."

    [[default]]
    content = "{}"

A reply may instead carry `error = "transient" | "permanent" | "crash"` to inject a fault,
and `delay_s` to simulate latency. Past the end of its list a case repeats its last reply.

A reply's `content` and the string values of its tool calls' arguments are templates over
the case it answers (its row's columns, `vars[...]`, `case.id`, `case.input.prompt`), filled
from the run's `ProviderOptions.case_values` (evalctl.runner.script_values): one `default`
reply, `content = "{{ expected }}"`, answers every row of a data file.

A case's side requests carry a suffix: a judge's is `suite/id#judge`, or, from a judge
assertion, `suite/id#judge:<check name>`. The addressed key answers that one check; the plain
`#judge` key answers every judge of the case without an addressed reply::

    [[cases."support/refund#judge:tone"]]
    content = '{"reason": "polite", "verdict": "pass"}'

    [[cases."support/refund#judge"]]
    content = '{"reason": "no deadline given", "verdict": "fail"}'
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evalctl import userfiles
from evalctl.chat import CompletionRequest, CompletionResponse, Role, StopReason, ToolCall, Usage
from evalctl.embeddings import Embeddings
from evalctl.errors import BadInputError, ProviderError, ServerCrashedError, TransientProviderError
from evalctl.fakes.embedder import fake_embeddings
from evalctl.providers.base import CHAT_AND_EMBEDDINGS, Provider
from evalctl.providers.options import CaseValues, ProviderOptions, ValueRenderer


class ScriptedToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ScriptedReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    content: str = ""
    tool_calls: list[ScriptedToolCall] = Field(default_factory=list)
    stop_reason: StopReason | None = None
    error: Literal["transient", "permanent", "crash"] | None = None
    delay_s: float = 0.0


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = "scripted"
    default: list[ScriptedReply] = Field(default_factory=list)
    cases: dict[str, list[ScriptedReply]] = Field(default_factory=dict)


def load_script(path: Path) -> Script:
    data = userfiles.read_toml_or_json(path, what="reply script")
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        loc = exc.errors()[0]["loc"]
        case_id = str(loc[1]) if len(loc) > 1 and loc[0] == "cases" else None
        raise userfiles.validation_error(
            exc.errors(), file=path, case_id=case_id, words=_message
        ) from None


def _message(err: Any) -> str:
    """The one wording (userfiles.validation_message), an unknown key with the known ones."""
    if err["type"] == "extra_forbidden":
        loc = err["loc"]
        model = (
            Script if len(loc) == 1 else ScriptedToolCall if "tool_calls" in loc else ScriptedReply
        )
        return f"unknown key (known: {', '.join(model.model_fields)})"
    return userfiles.validation_message(err)


def reply_keys(tag: str) -> list[str]:
    """The script keys a request's tag is answered under, first match wins: the tag, its bare
    id; then, for a side request addressed to one check (`suite/id#judge:tone`), the side
    request's plain keys (`suite/id#judge`, `id#judge`)."""
    keys = [tag, tag.split("/", 1)[-1]]
    head, hash_sign, side = tag.partition("#")
    if hash_sign and ":" in side:
        plain = f"{head}#{side.split(':', 1)[0]}"
        keys += [plain, plain.split("/", 1)[-1]]
    return keys


def replies_for(script: Script, tag: str) -> list[ScriptedReply]:
    """The replies a request tagged `tag` gets: its case's (`reply_keys`), else `default`."""
    return next(
        (script.cases[key] for key in reply_keys(tag) if script.cases.get(key)), script.default
    )


def unmatched_keys(script: Script, case_keys: Iterable[str]) -> list[str]:
    """Script keys that no case would ever look up. A key is `suite/id` or a bare `id`, with
    an optional `#suffix` for a case's side requests (`#judge`, `#judge:<check name>`)."""
    keys = set(case_keys)
    ids = {key.split("/", 1)[-1] for key in keys}
    return [k for k in script.cases if k.split("#", 1)[0] not in keys | ids]


def check_script_keys(path: Path, case_keys: Iterable[str]) -> None:
    """A mistyped case key would silently fall back to `default` (or to no reply): refuse
    a script whose keys match no case of the suites in scope."""
    problem = script_key_problem(load_script(path), path, case_keys)
    if problem is not None:
        raise problem


def script_key_problem(
    script: Script, path: Path, case_keys: Iterable[str]
) -> BadInputError | None:
    """The error naming the script's keys that match no case, if any do."""
    keys = sorted(case_keys)
    unmatched = unmatched_keys(script, keys)
    if not unmatched:
        return None
    shown = ", ".join(keys[:8]) + (", ..." if len(keys) > 8 else "")
    return BadInputError(
        f"{', '.join(map(repr, unmatched))} "
        f"{'matches' if len(unmatched) == 1 else 'match'} no case (known: {shown})",
        file=str(path),
        field="cases",
    )


def fill_reply(
    reply: ScriptedReply, values: Mapping[str, Any], render: ValueRenderer
) -> tuple[ScriptedReply, list[tuple[str, str]]]:
    """`reply` with its `content` and the string values of its tool calls' arguments filled
    from a case's values; and the problems, each as (field, message)."""
    problems: list[tuple[str, str]] = []
    content, found = render(reply.content, values)
    problems += [("content", message) for message in found]
    calls = []
    for index, call in enumerate(reply.tool_calls):
        arguments, found = render(call.arguments, values)
        problems += [(f"tool_calls[{index + 1}].arguments", message) for message in found]
        calls.append(call.model_copy(update={"arguments": arguments}))
    filled = reply.model_copy(
        update={"content": content if isinstance(content, str) else str(content)}
    )
    return filled.model_copy(update={"tool_calls": calls}), problems


class ScriptedProvider(Provider):
    name = "scripted"
    summary = "replays canned replies from a script file (tests and demos)"
    capabilities = CHAT_AND_EMBEDDINGS
    concurrent = True
    # A test tool: `--provider all` runs it only with --script (`replays_script`).
    real = False
    deterministic = True
    replays_script = True

    def __init__(self, script: Script, case_values: CaseValues | None = None):
        self._script = script
        # The run's cases' values: a reply is a template over its case (docs/writing-suites.md,
        # "Reply scripts"); None leaves every reply as written.
        self._case_values = case_values
        self.calls: list[CompletionRequest] = []

    @property
    def model(self) -> str:
        return self._script.model

    @classmethod
    def unavailable_reason(cls, options: ProviderOptions) -> str | None:
        if options.script is None:
            return "needs --script FILE (a test and demo provider that replays canned replies)"
        if not options.script.is_file():
            return f"script file {options.script} does not exist"
        return None

    @classmethod
    def check_given(cls, options: ProviderOptions) -> None:
        """Asking for the scripted provider without its --script is a missing flag, nothing
        wrong with the machine; a --script that is no file is bad input too."""
        script = options.script
        if script is None:
            raise BadInputError(
                "the scripted provider needs --script FILE (a reply script)",
                field="--script",
                hint="docs/writing-suites.md, 'Reply scripts', describes the file",
            )
        problem = userfiles.path_problem(script, "reply script")
        if problem is not None:
            raise BadInputError(problem, file=str(script), field="--script")

    @classmethod
    def unscripted(cls) -> ScriptedProvider:
        """No replies: for `--provider scripted` without --script where every case is driven
        by its kind's own tool calls (`drive()`, as `retrieval`'s)."""
        return cls(Script())

    def embed(self, texts: Sequence[str], *, timeout: float) -> Embeddings:
        """Not a model's embeddings: the deterministic hashed-words fake
        (evalctl.fakes.embedder), where texts sharing words are close. Scripts do not
        change it."""
        return fake_embeddings(texts)

    def complete(self, request: CompletionRequest, *, timeout: float) -> CompletionResponse:
        self.calls.append(request)
        replies = replies_for(self._script, request.tag)
        if not replies:
            raise ProviderError(f"script has no reply for case {request.tag!r} and no default")
        turn = sum(1 for m in request.messages if m.role is Role.ASSISTANT)
        reply = replies[min(turn, len(replies) - 1)]
        values = self._case_values.values_for(request.tag) if self._case_values else None
        if values is not None and self._case_values is not None:
            reply, problems = fill_reply(reply, values, self._case_values.render)
            if problems:
                field, message = problems[0]
                raise ProviderError(f"reply script, {field} for {request.tag!r}: {message}")
        if reply.delay_s:
            time.sleep(min(reply.delay_s, timeout))
            if reply.delay_s > timeout:
                return CompletionResponse(stop_reason="timeout", model=self.model)
        if reply.error == "transient":
            raise TransientProviderError("scripted transient failure")
        if reply.error == "permanent":
            raise ProviderError("scripted permanent failure")
        if reply.error == "crash":
            raise ServerCrashedError("scripted server crash")
        calls = [
            ToolCall(id=f"call_{turn}_{i}", name=c.name, arguments=c.arguments)
            for i, c in enumerate(reply.tool_calls)
        ]
        prompt_words = sum(len(m.content.split()) for m in request.messages)
        return CompletionResponse(
            content=reply.content,
            tool_calls=calls,
            stop_reason=reply.stop_reason or ("tool_use" if calls else "end_turn"),
            usage=Usage(input_tokens=prompt_words, output_tokens=len(reply.content.split())),
            model=self.model,
        )

    def close(self) -> None:
        pass


def create(options: ProviderOptions) -> ScriptedProvider:
    assert options.script is not None  # the registry checked availability first
    script = load_script(options.script)
    # `--model` names the model the replies stand in for (a matrix's cells); default: the
    # script's `model`.
    if options.model:
        script = script.model_copy(update={"model": options.model})
    return ScriptedProvider(script, options.case_values)
